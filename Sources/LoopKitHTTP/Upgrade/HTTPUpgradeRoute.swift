/// A route that switches the connection to another protocol through an upgrader, carried by
/// ``HTTPHandler/upgrade(_:)``. The upgraders are LoopKitHTTP's own (a WebSocket route is
/// ``HTTPHandler/webSocket(_:)``); there is no public initializer yet.
///
/// A value type: safe from any thread.
public struct HTTPUpgradeRoute: Sendable {
    let upgrader: any HTTPUpgrader

    init(_ upgrader: some HTTPUpgrader) {
        self.upgrader = upgrader
    }
}

extension HTTPUpgrader {
    /// The generic upgrade path for this upgrader (the existential opened once, at the request).
    /// Loop thread.
    func requested(_ request: HTTPServerRequest, head: HTTPRequestHead, on connection: HTTPConnection,
                   middleware: HTTPMiddlewareChain?) {
        if let middleware {
            connection.upgradeRequested(request, head: head, upgrader: self, middleware: middleware)
        } else {
            connection.upgradeRequested(request, head: head, upgrader: self)
        }
    }
}

extension HTTPRouter {
    /// Adds a `GET` route that upgrades through `upgrader`. Build the router on any thread.
    mutating func upgrade(_ path: String, to upgrader: some HTTPUpgrader) {
        add(.get, path, .upgrade(HTTPUpgradeRoute(upgrader)))
    }
}
