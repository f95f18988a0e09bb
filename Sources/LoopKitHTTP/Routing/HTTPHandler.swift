/// What runs for a route: synchronously on the loop thread, or as a task on the loop's executor; with
/// the request body collected first, or streamed to the handler as it arrives.
public enum HTTPHandler: Sendable {
    /// Runs on the connection's loop thread once the body is collected, and returns the response at
    /// once, inside the read callback that parsed the request: the fastest form. Made by
    /// `router.get(path) { … }` (or `router.get(path, .inline) { … }`).
    case sync(@Sendable (HTTPServerRequest) throws -> HTTPServerResponse)
    /// Runs as a `Task` whose executor preference is the connection's loop, once the body is collected:
    /// it starts on the loop thread (no hop) and may await, for example `loop.process(…)`. The connection
    /// is not read while it runs. Made by `router.get(path, .inTask) { … }` (``HTTPTaskExecution``).
    case async(@Sendable (HTTPServerRequest) async throws -> HTTPServerResponse)
    /// Runs as a `Task` on the connection's loop as soon as the head is parsed, and reads the body as it
    /// arrives (``HTTPRequestBody``), at most `limit` bytes (nil: no limit).
    case streaming(limit: Int?, @Sendable (HTTPServerRequest, HTTPRequestBody) async throws -> HTTPServerResponse)
    /// Runs on the connection's loop thread as soon as the head is parsed, reads the body with callbacks
    /// (``HTTPRequestBody/read(_:onEnd:)``) and answers through the ``HTTPResponder``, once; at most
    /// `limit` body bytes (nil: no limit).
    case streamingCallback(limit: Int?, @Sendable (HTTPServerRequest, HTTPRequestBody, HTTPResponder) -> Void)
    /// Upgrades the connection to a WebSocket (RFC 6455) once the request head is complete; made by
    /// `router.webSocket(…)`.
    ///
    /// Boxed (`indirect`): a route's configuration and closures take 120 bytes inline, and every idle
    /// keep-alive connection holds a handler twice (its route and its resolution), so unboxed they made
    /// the enum, and each connection, that much larger. The box is made once, with the route.
    indirect case webSocket(WebSocketRoute)
    /// Switches the connection to another protocol once the request head is complete, through the
    /// route's upgrader (``HTTPUpgradeRoute``): the `101`, then the hand-over. Boxed like
    /// ``webSocket(_:)``.
    indirect case upgrade(HTTPUpgradeRoute)
    /// Runs on the connection's loop thread once the body is collected, as ``sync(_:)`` does, when it can
    /// answer at once; in a task, as ``async(_:)``, when it cannot: what ``HTTPRouter/files(_:root:options:)``
    /// routes to (a file whose bytes it holds, still the same on disk, is answered inline; any other goes
    /// to the work pool). Boxed like ``webSocket(_:)``.
    indirect case inlineOrTask(HTTPInlineOrTaskRoute)

    /// Whether the handler reads the body as it arrives (it starts at the head).
    var streamsBody: Bool {
        switch self {
        case .sync, .async, .webSocket, .upgrade, .inlineOrTask: false
        case .streaming, .streamingCallback: true
        }
    }
}

/// A handler that answers inline when it can and in a task when it cannot (``HTTPHandler/inlineOrTask(_:)``).
///
/// A plain value; safe from any thread. Its closures run on the connection's loop thread (the task's
/// executor is the loop).
public struct HTTPInlineOrTaskRoute: Sendable {
    /// Answers on the loop thread, inside the read callback that parsed the request, or returns nil
    /// (having done nothing that shows) to have ``inTask`` answer. It must not block.
    let inline: @Sendable (HTTPServerRequest) throws -> HTTPServerResponse?
    /// Answers the requests ``inline`` left, as an ``HTTPHandler/async(_:)`` handler does.
    let inTask: @Sendable (HTTPServerRequest) async throws -> HTTPServerResponse

    init(inline: @escaping @Sendable (HTTPServerRequest) throws -> HTTPServerResponse?,
         inTask: @escaping @Sendable (HTTPServerRequest) async throws -> HTTPServerResponse) {
        self.inline = inline
        self.inTask = inTask
    }
}
