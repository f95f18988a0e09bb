extension HTTPRouter {
    /// Adds a `GET` route that upgrades to a WebSocket and runs `handler` with it, as a task on the
    /// connection's loop; when the handler returns the socket closes with 1000 (1011 when it throws).
    ///
    /// ```swift
    /// router.webSocket("/ws/echo") { request, socket in
    ///     for try await message in socket.messages { try await socket.send(message) }
    /// }
    /// ```
    /// A request that is not a valid upgrade gets 400, or 426 with `Sec-WebSocket-Version: 13`.
    ///
    /// - Parameters:
    ///   - path: The path pattern.
    ///   - configuration: Limits, timeouts and compression.
    ///   - shouldUpgrade: Decides, from the request, whether to accept; nil accepts every valid upgrade.
    ///   - handler: Runs with the request and the socket, once the `101` is written.
    ///
    /// Build the router on any thread.
    public mutating func webSocket(
        _ path: String, configuration: WebSocketConfiguration = WebSocketConfiguration(),
        shouldUpgrade: (@Sendable (HTTPServerRequest) async throws -> WebSocketUpgradeDecision)? = nil,
        _ handler: @escaping @Sendable (HTTPServerRequest, WebSocket) async throws -> Void
    ) {
        add(.get, path, .webSocket(WebSocketRoute(configuration: configuration, shouldUpgrade: shouldUpgrade,
                                                  handler: .async(handler))))
    }

    /// Adds a `GET` route that upgrades to a WebSocket and hands it to `handler` on the connection's loop
    /// thread, to set callbacks (``WebSocket/onMessage(_:)``, ``WebSocket/onClose(_:)``): the socket
    /// lives on after the handler returns, until either side closes it.
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
}
