import LoopKit

extension WebSocket {
    /// The messages as they arrive, as an `AsyncSequence`; one reader at a time.
    ///
    /// The sequence's demand drives reading: once ``WebSocketConfiguration/inboundBufferLimit`` bytes of
    /// messages wait unread, the socket is not read (the client's sends then wait in its kernel) until
    /// the reader takes one. The sequence ends (nil) after a clean close handshake, started by either
    /// side, and throws the ``WebSocketError`` that ended the socket otherwise.
    ///
    /// Iterate on the loop's thread: from the route's handler, or a `Task` whose executor preference is
    /// ``loop``.
    public var messages: Messages { Messages(socket: self) }

    /// The messages of a ``WebSocket``; see ``WebSocket/messages``.
    public struct Messages: AsyncSequence, Sendable {
        public typealias Element = WebSocketMessage
        public typealias Failure = WebSocketError

        let socket: WebSocket

        /// Makes the iterator. Call on the socket's loop's thread.
        public func makeAsyncIterator() -> Iterator { Iterator(socket: socket) }

        /// Reads the next message.
        public struct Iterator: AsyncIteratorProtocol {
            public typealias Element = WebSocketMessage
            public typealias Failure = WebSocketError

            @usableFromInline let socket: WebSocket

            init(socket: WebSocket) { self.socket = socket }

            /// The next message, or nil after a clean close. Call on the socket's loop's thread.
            /// - Throws: The ``WebSocketError`` that ended the socket.
            public mutating func next() async throws(WebSocketError) -> WebSocketMessage? {
                try await SingleConsumerWaiter.next(readyNow: { socket.readyMessage() }) { socket.waitForMessage($0) }
            }

            /// The next message, or nil after a clean close. Call on the socket's loop's thread.
            ///
            /// A message already waiting is returned without suspending; otherwise the task suspends
            /// here, in the caller's isolation, until one arrives (inlinable, so that a `for await`
            /// loop pays no executor hop for the call itself).
            /// - Throws: The ``WebSocketError`` that ended the socket.
            @inlinable
            public mutating func next(isolation actor: isolated (any Actor)?) async throws(WebSocketError) -> WebSocketMessage? {
                try await SingleConsumerWaiter.next(isolation: actor, readyNow: { socket.readyMessage() }) { socket.waitForMessage($0) }
            }
        }
    }

    /// What the `messages` reader gets without waiting: a message, the end, or nil when it must wait.
    /// Loop thread (checked).
    @usableFromInline
    func readyMessage() -> Result<WebSocketMessage?, WebSocketError>? {
        precondition(loop.isCurrent, "WebSocket.messages read off the socket's loop thread")
        return core.value.takeMessage()
    }

    /// Parks the suspended `messages` reader until a message or the end. Loop thread.
    @usableFromInline
    func waitForMessage(_ continuation: UnsafeContinuation<Result<WebSocketMessage?, WebSocketError>, Never>) {
        core.value.waitForMessage(continuation)
    }

    /// Sends a message as one frame, then suspends while the connection's unsent output is above its
    /// write high-water mark (until it drains to the low-water mark): a slow reader slows the sender.
    ///
    /// - Parameter message: The message.
    /// - Throws: ``WebSocketError/closed(_:reason:)`` (or what ended the socket) once it is closing or
    ///   closed, also when it ends while the send waits.
    ///
    /// Call on the loop's thread (from the route's handler or a task on ``loop``).
    @inlinable
    public func send(_ message: WebSocketMessage) async throws(WebSocketError) {
        guard try writeForSend(message) else { return }
        try await waitUntilDrained()
    }

    /// Writes `message` for ``send(_:)``; returns whether the sender must now wait for the output to
    /// drain (it is above the write high-water mark). Loop thread (checked).
    @usableFromInline
    func writeForSend(_ message: WebSocketMessage) throws(WebSocketError) -> Bool {
        precondition(loop.isCurrent, "WebSocket.send(_:) called off the socket's loop thread")
        let core = core.value
        try core.write(message)
        return core.tcp.writersMustWait
    }

    /// Suspends until the output has drained to the low-water mark; throws what ended the socket if it
    /// ends meanwhile. Loop thread.
    @usableFromInline
    func waitUntilDrained() async throws(WebSocketError) {
        let tcp = core.value.tcp
        do {
            try await tcp.waitUntilWritable()
        } catch {
            throw core.value.closedError
        }
    }
}
