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

            let socket: WebSocket

            /// The next message, or nil after a clean close. Call on the socket's loop's thread.
            /// - Throws: The ``WebSocketError`` that ended the socket.
            public mutating func next() async throws(WebSocketError) -> WebSocketMessage? {
                try await socket.nextMessage()
            }

            /// The next message, or nil after a clean close. Call on the socket's loop's thread.
            /// - Throws: The ``WebSocketError`` that ended the socket.
            public mutating func next(isolation actor: isolated (any Actor)?) async throws(WebSocketError) -> WebSocketMessage? {
                try await socket.nextMessage()
            }
        }
    }

    func nextMessage() async throws(WebSocketError) -> WebSocketMessage? {
        precondition(loop.isCurrent, "WebSocket.messages read off the socket's loop thread")
        return try await core.value.waitForMessage().get()
    }

    /// Sends a message as one frame, then suspends while the connection's unsent output is above its
    /// write high-water mark (until it drains to the low-water mark): a slow reader slows the sender.
    ///
    /// - Parameter message: The message.
    /// - Throws: ``WebSocketError/closed(_:reason:)`` (or what ended the socket) once it is closing or
    ///   closed, also when it ends while the send waits.
    ///
    /// Call on the loop's thread (from the route's handler or a task on ``loop``).
    public func send(_ message: WebSocketMessage) async throws(WebSocketError) {
        precondition(loop.isCurrent, "WebSocket.send(_:) called off the socket's loop thread")
        try core.value.write(message)
        let tcp = core.value.tcp
        do {
            try await tcp.waitUntilWritable()
        } catch {
            throw core.value.closedError
        }
    }
}
