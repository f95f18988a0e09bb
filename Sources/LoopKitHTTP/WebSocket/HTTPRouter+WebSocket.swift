extension HTTPRouter {
    /// Adds a `GET` route that upgrades to a WebSocket and runs `handler` with it as a task on the
    /// connection's loop; when the handler returns, the socket closes with 1000 (1011 when it throws).
    ///
    /// ```swift
    /// router.webSocket("/ws/echo", .inTask) { request, socket in
    ///     for try await message in socket.messages { try await socket.send(message) }
    /// }
    /// ```
    /// A request that is not a valid upgrade gets 400, or 426 with `Sec-WebSocket-Version: 13`.
    ///
    /// `.inTask` says at the call site that the handler is a task whose return closes the socket: without
    /// it, a closure with an `await` would pick this form over the inline one
    /// (``webSocket(_:_:configuration:shouldUpgrade:_:)-(_,HTTPInlineExecution,_,_,_)``) silently.
    ///
    /// - Parameters:
    ///   - path: The path pattern.
    ///   - execution: ``HTTPTaskExecution/inTask``.
    ///   - configuration: Limits, timeouts and compression.
    ///   - shouldUpgrade: Decides, from the request, whether to accept; nil accepts every valid upgrade.
    ///   - handler: Runs with the request and the socket, once the `101` is written.
    ///
    /// Build the router on any thread.
    public mutating func webSocket(
        _ path: String, _ execution: HTTPTaskExecution, configuration: WebSocketConfiguration = WebSocketConfiguration(),
        shouldUpgrade: (@Sendable (HTTPServerRequest) async throws -> WebSocketUpgradeDecision)? = nil,
        _ handler: @escaping @Sendable (HTTPServerRequest, WebSocket) async throws -> Void
    ) {
        add(.get, path, .webSocket(WebSocketRoute(configuration: configuration, shouldUpgrade: shouldUpgrade,
                                                  handler: .async(handler))))
    }

    /// Adds a `GET` route that upgrades to a WebSocket and runs `handler` with it as a task, without
    /// saying so at the call site: deprecated, as one `await` added to an inline handler's closure picks
    /// this form silently (and then the socket closes when the handler returns).
    ///
    /// - Parameters:
    ///   - path: The path pattern.
    ///   - configuration: Limits, timeouts and compression.
    ///   - shouldUpgrade: Decides, from the request, whether to accept; nil accepts every valid upgrade.
    ///   - handler: Runs with the request and the socket, once the `101` is written.
    ///
    /// Build the router on any thread.
    @available(*, deprecated, message: "this async handler runs in a task and the socket closes when it returns: say so with webSocket(path, .inTask) { … }, or drop the await to set callbacks inline")
    public mutating func webSocket(
        _ path: String, configuration: WebSocketConfiguration = WebSocketConfiguration(),
        shouldUpgrade: (@Sendable (HTTPServerRequest) async throws -> WebSocketUpgradeDecision)? = nil,
        _ handler: @escaping @Sendable (HTTPServerRequest, WebSocket) async throws -> Void
    ) {
        webSocket(path, .inTask, configuration: configuration, shouldUpgrade: shouldUpgrade, handler)
    }

    /// Adds a `GET` route that upgrades to a WebSocket and hands it to `handler` inline, on the
    /// connection's loop thread, to set callbacks (``WebSocket/onMessage(_:)``, ``WebSocket/onClose(_:)``):
    /// the socket lives on after the handler returns, until either side closes it.
    ///
    /// ```swift
    /// router.webSocket("/ws/shout") { request, socket in
    ///     socket.onMessage { message in
    ///         guard case .text(let text) = message else { return }
    ///         do { try socket.write(.text(text.uppercased())) } catch { return }  // closed: onClose says why
    ///     }
    /// }
    /// ```
    /// - Parameters:
    ///   - path: The path pattern.
    ///   - configuration: Limits, timeouts and compression.
    ///   - shouldUpgrade: Decides, from the request, whether to accept; nil accepts every valid upgrade.
    ///   - handler: Runs on the loop's thread with the request and the socket, once the `101` is written.
    ///
    /// Build the router on any thread.
    public mutating func webSocket(
        _ path: String, configuration: WebSocketConfiguration = WebSocketConfiguration(),
        shouldUpgrade: (@Sendable (HTTPServerRequest) async throws -> WebSocketUpgradeDecision)? = nil,
        _ handler: @escaping @Sendable (HTTPServerRequest, WebSocket) -> Void
    ) {
        add(.get, path, .webSocket(WebSocketRoute(configuration: configuration, shouldUpgrade: shouldUpgrade,
                                                  handler: .callback(handler))))
    }

    /// Adds a `GET` route that upgrades to a WebSocket and hands it to `handler` inline, saying so: the
    /// same as the form without `.inline`.
    ///
    /// ```swift
    /// router.webSocket("/ws/shout", .inline) { request, socket in socket.onMessage { _ in } }
    /// ```
    /// - Parameters:
    ///   - path: The path pattern.
    ///   - execution: ``HTTPInlineExecution/inline``.
    ///   - configuration: Limits, timeouts and compression.
    ///   - shouldUpgrade: Decides, from the request, whether to accept; nil accepts every valid upgrade.
    ///   - handler: Runs on the loop's thread with the request and the socket, once the `101` is written.
    ///
    /// Build the router on any thread.
    public mutating func webSocket(
        _ path: String, _ execution: HTTPInlineExecution, configuration: WebSocketConfiguration = WebSocketConfiguration(),
        shouldUpgrade: (@Sendable (HTTPServerRequest) async throws -> WebSocketUpgradeDecision)? = nil,
        _ handler: @escaping @Sendable (HTTPServerRequest, WebSocket) -> Void
    ) {
        webSocket(path, configuration: configuration, shouldUpgrade: shouldUpgrade, handler)
    }

    /// Adds a `GET` route that upgrades to a WebSocket once `accepting` has looked up what the socket is
    /// for, and runs `handler` with that value as a task on the connection's loop; when the handler
    /// returns, the socket closes with 1000 (1011 when it throws).
    ///
    /// ```swift
    /// router.webSocket("/rooms/:name", .inTask, accepting: { request in
    ///     guard let room = rooms[try request.parameters.require("name")] else { throw HTTPError(.notFound) }
    ///     return room                                         // looked up once, handed to the handler
    /// }) { request, socket, room in
    ///     for await line in room.subscribe() { try await socket.send(.text(line)) }
    /// }
    /// ```
    /// `accepting` runs in a task on the connection's loop after the handshake is checked, behind the
    /// route's middleware when it has any; what it throws refuses the upgrade before the `101`, the
    /// connection staying HTTP: an ``HTTPError`` with its status (a 404 for a room that does not exist),
    /// anything else 500, rendered by ``HTTPServer/Configuration/errorRenderer``. A request that is not a
    /// valid upgrade gets 400, or 426, without asking it.
    ///
    /// - Parameters:
    ///   - path: The path pattern.
    ///   - execution: ``HTTPTaskExecution/inTask``.
    ///   - configuration: Limits, timeouts and compression.
    ///   - accepting: Looks up the socket's value from the request, or throws to refuse.
    ///   - handler: Runs with the request, the socket and the value, once the `101` is written.
    ///
    /// Build the router on any thread.
    public mutating func webSocket<Value: Sendable>(
        _ path: String, _ execution: HTTPTaskExecution, configuration: WebSocketConfiguration = WebSocketConfiguration(),
        accepting: @escaping @Sendable (HTTPServerRequest) async throws -> Value,
        _ handler: @escaping @Sendable (HTTPServerRequest, WebSocket, Value) async throws -> Void
    ) {
        var route = WebSocketRoute(configuration: configuration, shouldUpgrade: nil, handler: .accepted)
        route.accepting = { request in
            let value = try await accepting(request)
            return .async { request, socket in try await handler(request, socket, value) }
        }
        add(.get, path, .webSocket(route))
    }

    /// Adds a `GET` route that upgrades to a WebSocket once `accepting` has looked up what the socket is
    /// for, and hands the socket and that value to `handler` inline, on the connection's loop thread, to
    /// set callbacks: the socket lives on after the handler returns, until either side closes it.
    ///
    /// ```swift
    /// router.webSocket("/rooms/:name", accepting: { request in
    ///     guard let room = rooms[try request.parameters.require("name")] else { throw HTTPError(.notFound) }
    ///     return room
    /// }) { request, socket, room in
    ///     socket.onMessage { message in if case .text(let text) = message { room.send(text) } }
    /// }
    /// ```
    /// `accepting` refuses as in ``webSocket(_:_:configuration:accepting:_:)``.
    ///
    /// - Parameters:
    ///   - path: The path pattern.
    ///   - configuration: Limits, timeouts and compression.
    ///   - accepting: Looks up the socket's value from the request, or throws to refuse.
    ///   - handler: Runs on the loop's thread with the request, the socket and the value, once the `101`
    ///     is written.
    ///
    /// Build the router on any thread.
    public mutating func webSocket<Value: Sendable>(
        _ path: String, configuration: WebSocketConfiguration = WebSocketConfiguration(),
        accepting: @escaping @Sendable (HTTPServerRequest) async throws -> Value,
        _ handler: @escaping @Sendable (HTTPServerRequest, WebSocket, Value) -> Void
    ) {
        var route = WebSocketRoute(configuration: configuration, shouldUpgrade: nil, handler: .accepted)
        route.accepting = { request in
            let value = try await accepting(request)
            return .callback { request, socket in handler(request, socket, value) }
        }
        add(.get, path, .webSocket(route))
    }
}
