import LoopKit

/// What a WebSocket route runs: the upgrade check, the configuration and the handler. Made by
/// `router.webSocket(…)`; carried by ``HTTPHandler/webSocket(_:)``.
///
/// A value type: safe from any thread.
public struct WebSocketRoute: Sendable {
    enum Handler: Sendable {
        case async(@Sendable (HTTPServerRequest, WebSocket) async throws -> Void)
        case callback(@Sendable (HTTPServerRequest, WebSocket) -> Void)
        /// The handler its route's `accepting` check returns, bound to the value it looked up (an `.async`
        /// or a `.callback` one, per request).
        case accepted
    }

    let configuration: WebSocketConfiguration
    let shouldUpgrade: (@Sendable (HTTPServerRequest) async throws -> WebSocketUpgradeDecision)?
    /// The check of a route whose handler takes a value (`router.webSocket(_:_:configuration:accepting:_:)`): it looks
    /// the value up and returns the handler bound to it, or throws to refuse (an ``HTTPError`` with its
    /// status) before the `101`.
    var accepting: (@Sendable (HTTPServerRequest) async throws -> Handler)?
    let handler: Handler
}

/// The handler a route's `accepting` check returned, bound to the value it looked up, from the check (in a
/// task) to the socket's start (on the loop, after the `101`): one per request of such a route, made with
/// its upgrader.
final class AcceptedHandler: Sendable {
    private let handler = Lock<WebSocketRoute.Handler?>(nil)

    func store(_ accepted: WebSocketRoute.Handler) { handler.withLock { $0 = accepted } }

    func take() -> WebSocketRoute.Handler? { handler.withLock { $0.take() } }
}
