/// A route that switches the connection to another protocol through an upgrader, carried by
/// ``HTTPHandler/upgrade(_:)`` (a WebSocket route is ``HTTPHandler/webSocket(_:)``, whose upgrader is
/// LoopKitHTTP's own). Made by `router.upgrade(_:to:)`, or with ``init(_:)``.
///
/// A value type: safe from any thread.
public struct HTTPUpgradeRoute: Sendable {
    let upgrader: any HTTPUpgrader

    /// A route that upgrades through `upgrader`. Safe from any thread.
    ///
    /// - Parameter upgrader: The protocol the connection switches to.
    public init(_ upgrader: some HTTPUpgrader) {
        self.upgrader = upgrader
    }
}

extension HTTPUpgrader {
    /// The dispatcher's upgrade path for this upgrader (the existential opened once, at the request).
    /// Loop thread.
    func requested(_ request: HTTPServerRequest, on stream: some HTTPStream, middleware: HTTPMiddlewareChain?) {
        HTTPDispatcher.upgradeRequested(request, upgrader: self, middleware: middleware, on: stream)
    }
}

extension HTTPRouter {
    /// The shortest deadline a protocol its routes upgrade to keeps (``HTTPUpgrader/shortestDeadline``),
    /// nil when none does: the server's sweep ticks fast enough for it too.
    var shortestUpgradeDeadline: Duration? {
        routes.compactMap { route -> Duration? in
            switch route.handler {
            case .webSocket(let webSocket): WebSocketUpgrader(route: webSocket).shortestDeadline
            case .upgrade(let upgrade): upgrade.upgrader.shortestDeadline
            default: nil
            }
        }.min()
    }

    /// Adds a `GET` route that upgrades through `upgrader`. Build the router on any thread.
    ///
    /// - Parameters:
    ///   - path: The route's path, with parameters as for any route.
    ///   - upgrader: The protocol the connection switches to.
    public mutating func upgrade(_ path: String, to upgrader: some HTTPUpgrader) {
        add(.get, path, .upgrade(HTTPUpgradeRoute(upgrader)))
    }
}
