/// What a WebSocket route runs: the upgrade check, the configuration and the handler. Made by
/// `router.webSocket(…)`; carried by ``HTTPHandler/webSocket(_:)``.
///
/// A value type: safe from any thread.
public struct WebSocketRoute: Sendable {
    enum Handler: Sendable {
        case async(@Sendable (HTTPServerRequest, WebSocket) async throws -> Void)
        case callback(@Sendable (HTTPServerRequest, WebSocket) -> Void)
    }

    let configuration: WebSocketConfiguration
    let shouldUpgrade: (@Sendable (HTTPServerRequest) async throws -> WebSocketUpgradeDecision)?
    let handler: Handler
}
