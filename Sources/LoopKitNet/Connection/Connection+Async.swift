import LoopKit

extension Connection {
    /// The inbound bytes as an asynchronous sequence of chunks, each at most
    /// ``ConnectionOptions/readHighWaterMark`` bytes.
    ///
    /// The sequence's demand drives reading: bytes wait in the connection's input until the consumer
    /// asks for the next chunk, and once the read high-water mark is buffered the socket is no longer
    /// read. Each chunk is one copy out of the read buffer. The sequence ends (nil) when the peer ends its
    /// side and every byte has been read, or when this side closes; it throws
    /// ``NetError/connectionClosed(_:)`` when the connection ends with an error (reset, timeout, …).
    /// One consumer at a time.
    ///
    /// Iterate on the loop's thread: from a `Task` whose executor preference is ``loop``.
    public var inbound: Inbound { Inbound(connection: self) }

    /// The inbound bytes of a connection as chunks of ``Bytes``; see ``Connection/inbound``.
    public struct Inbound: AsyncSequence, Sendable {
        public typealias Element = Bytes
        public typealias Failure = NetError

        let connection: Connection

        /// Makes the iterator. Call on the connection's loop's thread.
        public func makeAsyncIterator() -> Iterator { Iterator(connection: connection) }

        /// Reads the next chunk.
        public struct Iterator: AsyncIteratorProtocol {
            public typealias Element = Bytes
            public typealias Failure = NetError

            let connection: Connection

            /// The next chunk, or nil at the end. Call on the connection's loop's thread.
            /// - Throws: ``NetError/connectionClosed(_:)`` when the connection ended with an error.
            public mutating func next() async throws(NetError) -> Bytes? {
                try await connection.nextInboundChunk()
            }

            /// The next chunk, or nil at the end. Call on the connection's loop's thread.
            /// - Throws: ``NetError/connectionClosed(_:)`` when the connection ended with an error.
            public mutating func next(isolation actor: isolated (any Actor)?) async throws(NetError) -> Bytes? {
                try await connection.nextInboundChunk()
            }
        }
    }

    /// The next inbound chunk; suspends until bytes arrive or the input ends. Loop thread only.
    func nextInboundChunk() async throws(NetError) -> Bytes? {
        checkThread("inbound")
        return try await SingleConsumerWaiter.next(readyNow: { inboundReadyNow() }) { continuation in
            readWaiter.park(continuation, for: "Connection.inbound")
            updateReadInterest()
        }
    }

    /// What a reader gets without waiting: a chunk, the end, or the error; nil when it must wait.
    private func inboundReadyNow() -> Result<Bytes?, NetError>? {
        if !input.isEmpty { return .success(takeInputChunk()) }
        if case .closed(let reason) = machine.state {
            return reason.isClean ? .success(nil) : .failure(.connectionClosed(reason))
        }
        return machine.inputEnded ? .success(nil) : nil
    }

    /// Sends `bytes` (by reference, no copy) and suspends while the output is above
    /// ``ConnectionOptions/writeHighWaterMark``, until it drains to ``ConnectionOptions/writeLowWaterMark``.
    ///
    /// The async counterpart of ``write(_:)-(Bytes)``, under its own name so that a forgotten `await`
    /// cannot pick the write that does not wait.
    ///
    /// - Parameter bytes: The bytes to send.
    /// - Throws: ``NetError/connectionClosed(_:)`` when the connection is closed, or ends with an error
    ///   while the send waits.
    ///
    /// Call on the loop's thread (from a `Task` whose executor preference is ``loop``).
    public func send(_ bytes: Bytes) async throws(NetError) {
        try write(bytes)
        try await waitUntilWritable()
    }

    /// Sends the UTF-8 bytes of `string` (one copy at most), suspending as ``send(_:)-(Bytes)`` does.
    /// - Throws: As ``send(_:)-(Bytes)``.
    ///
    /// Call on the loop's thread.
    public func send(_ string: String) async throws(NetError) {
        try write(string)
        try await waitUntilWritable()
    }

    /// Whether ``waitUntilWritable()`` would suspend now: the output went above the write high-water
    /// mark and has not drained to the low-water mark, and the connection is open. Loop thread.
    package var writersMustWait: Bool {
        checkThread()
        return aboveHighWater && !machine.isClosed
    }

    /// Suspends while the output is above the write high-water mark. Any number of tasks may wait; all
    /// resume together at the low-water mark, or when the connection ends.
    ///
    /// - Throws: ``NetError/connectionClosed(_:)`` when the connection ends with an error meanwhile.
    ///
    /// Call on the loop's thread.
    public func waitUntilWritable() async throws(NetError) {
        checkThread()
        guard aboveHighWater, !machine.isClosed else { return }
        let result = await withUnsafeContinuation { continuation in
            // As for reads: the output may have drained while the task hopped here.
            if aboveHighWater, !machine.isClosed {
                writeWaiters.append(continuation)
            } else if case .closed(let reason) = machine.state, !reason.isClean {
                continuation.resume(returning: .failure(.connectionClosed(reason)))
            } else {
                continuation.resume(returning: .success(()))
            }
        }
        try result.get()
    }
}
