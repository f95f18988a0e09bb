import LoopKit

extension UDPSocket {
    /// The received datagrams as an asynchronous sequence of owned ``UDPDatagram``s.
    ///
    /// The consumer's demand drives reading: the socket is read from the first `next()` on, and while at
    /// most ``UDPOptions/inboundLimit`` datagrams wait untaken (beyond that the kernel buffers, then drops:
    /// UDP). Each datagram is one copy out of the receive buffers. The sequence ends (nil) after
    /// ``close()``, and throws ``UDPError/loopShutDown`` when the loop shuts down. One consumer, and not
    /// together with ``onDatagrams(_:)``.
    ///
    /// Iterate on the loop's thread: from a `Task` whose executor preference is ``loop``.
    public var datagrams: Datagrams { Datagrams(socket: self) }

    /// The received datagrams of a socket; see ``UDPSocket/datagrams``.
    public struct Datagrams: AsyncSequence, Sendable {
        public typealias Element = UDPDatagram
        public typealias Failure = UDPError

        let socket: UDPSocket

        /// Makes the iterator. Call on the socket's loop's thread.
        public func makeAsyncIterator() -> Iterator { Iterator(socket: socket) }

        /// Receives the next datagram.
        public struct Iterator: AsyncIteratorProtocol {
            public typealias Element = UDPDatagram
            public typealias Failure = UDPError

            let socket: UDPSocket

            /// The next datagram, or nil once the socket is closed. Call on the socket's loop's thread.
            /// - Throws: ``UDPError/loopShutDown`` when the loop shut down.
            public mutating func next() async throws(UDPError) -> UDPDatagram? {
                try await socket.nextDatagram()
            }

            /// The next datagram, or nil once the socket is closed. Call on the socket's loop's thread.
            /// - Throws: ``UDPError/loopShutDown`` when the loop shut down.
            public mutating func next(isolation actor: isolated (any Actor)?) async throws(UDPError) -> UDPDatagram? {
                try await socket.nextDatagram()
            }
        }
    }

    /// The next datagram; suspends until one arrives or the socket closes. Loop thread only.
    func nextDatagram() async throws(UDPError) -> UDPDatagram? {
        checkThread("datagrams")
        precondition(datagramHandler == nil, "UDPSocket.datagrams: the socket already has an onDatagrams handler")
        if !asyncConsumerStarted {
            asyncConsumerStarted = true
            updateReadInterest()
        }
        return try await SingleConsumerWaiter.next(readyNow: { datagramReadyNow() }) { continuation in
            readWaiter.park(continuation, for: "UDPSocket.datagrams")
            updateReadInterest()
        }
    }

    /// What a consumer gets without waiting: a datagram, the end, or the error; nil when it must wait.
    private func datagramReadyNow() -> Result<UDPDatagram?, UDPError>? {
        if inboundHead < inbound.count {
            let datagram = inbound[inboundHead]
            inboundHead += 1
            if inboundHead == inbound.count {
                inbound.removeAll(keepingCapacity: true)
                inboundHead = 0
            } else if inboundHead >= 1024 && inboundHead * 2 >= inbound.count {
                inbound.removeFirst(inboundHead)
                inboundHead = 0
            }
            updateReadInterest()
            return .success(datagram)
        }
        if let closeReason { return closeReason == .closed ? .success(nil) : .failure(closeReason) }
        return nil
    }
}
