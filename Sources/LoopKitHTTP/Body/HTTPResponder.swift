/// Answers the request of a callback-form streaming route (``HTTPHandler/streamingCallback(limit:_:)``).
///
/// **Thread rule**: call ``send(_:)`` on the connection's loop thread (where the handler and the body's
/// callbacks run). It is `Sendable` so it can be stored in the handler's state; the unchecked part is
/// the connection it points to, which is loop-confined.
public struct HTTPResponder: Sendable {
    /// The stream it answers on: the HTTP/1 connection, or an HTTP/2 stream.
    private weak var connection: (any HTTPStream)?
    /// Behind middleware: the chain waiting for the response (it goes out through them).
    private let slot: HTTPResponseSlot?

    init(connection: some HTTPStream, slot: HTTPResponseSlot? = nil) {
        self.connection = connection
        self.slot = slot
    }

    /// Sends the response. Only the first response of a request is sent; one sent before the whole body
    /// has arrived closes the connection after it (see ``HTTPRequestBody``). Does nothing once the client
    /// has gone.
    ///
    /// - Parameter response: The response.
    ///
    /// Call on the connection's loop thread.
    public func send(_ response: HTTPServerResponse) {
        guard let connection else { return }
        precondition(connection.context.loop.isCurrent, "HTTPResponder.send(_:) called off the connection's loop thread")
        Self.respond(response, slot: slot, on: connection)
    }

    private static func respond(_ response: HTTPServerResponse, slot: HTTPResponseSlot?, on stream: some HTTPStream) {
        HTTPDispatcher.respond(response, slot: slot, on: stream)
    }
}
