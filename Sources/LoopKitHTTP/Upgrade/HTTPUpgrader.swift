import HTTPTypes
import LoopKitNet

/// A protocol an HTTP/1.1 connection can switch to (RFC 9110 §7.8): the one way an upgrade happens, for
/// WebSocket (an internal conformer) and for any protocol a user writes (`router.upgrade(_:to:)`), as the
/// dispatcher's one generic
/// upgrade path (``HTTPDispatcher/upgradeRequested(_:upgrader:middleware:on:)``) sees it: what the upgrade needs
/// from the HTTP connection, and what it gives back.
///
/// The path, the same for every upgrader, with or without middleware: the head is checked
/// (``check(_:)``: accept, with what the `101` needs, or refuse with an HTTP response); the route is
/// asked when ``asksRoute`` (``shouldUpgrade(_:)``, in a task, or as the terminal of the middleware
/// chain); the HTTP connection writes ``switchingProtocols(_:fields:)`` and logs the request; then
/// ``takeOver(_:acceptance:context:)`` makes the new protocol's ``ConnectionHandler``, which is
/// installed with ``Connection/replaceHandler(_:)`` (it is lent the bytes the client sent after its
/// request; the TCP connection stays in the loop's registry, counted once, and the registry's drain
/// reaches the new handler through ``ConnectionHandler/connectionShouldDrain(_:)``), reading resumes,
/// the HTTP connection is released, and ``start(_:request:context:)`` runs.
///
/// A conformer is a value made with its route: safe from any thread; its methods other than
/// ``shouldUpgrade(_:)`` are called on the connection's loop thread.
public protocol HTTPUpgrader: Sendable {
    /// What an accepted head gives the `101` and the take-over (for WebSocket: the key and the
    /// negotiated extension).
    associatedtype Acceptance: Sendable
    /// The new protocol's handler of the TCP connection.
    associatedtype Handler: ConnectionHandler

    /// Checks the request head: accepted (with what the `101` needs) or refused (the response to send;
    /// the connection stays HTTP). Loop thread.
    func check(_ head: HTTPRequestHead) -> HTTPUpgradeCheck<Acceptance>

    /// Whether the route is asked before the upgrade (``shouldUpgrade(_:)``); when false and there is
    /// no middleware, the upgrade runs from a job on the loop, with no task. Loop thread.
    var asksRoute: Bool { get }

    /// Asks the route whether to upgrade: accept (with fields for the `101`) or refuse with a response.
    /// Runs in a task on the connection's loop; only called when ``asksRoute``.
    func shouldUpgrade(_ request: HTTPServerRequest) async throws -> HTTPUpgradeDecision

    /// The bytes of the `101 Switching Protocols` response: the protocol's own fields and `fields` (the
    /// route's, the middleware's and the request id). Loop thread.
    func switchingProtocols(_ acceptance: Acceptance, fields: HTTPFields) -> [UInt8]

    /// After the `101` was written: the new protocol's handler for `tcp`. It may not hold the HTTP
    /// connection. Loop thread.
    func takeOver(_ tcp: Connection, acceptance: Acceptance, context: HTTPLoopContext) -> Handler

    /// The handler is installed and reading resumed: start the protocol (for WebSocket: its keep-alive
    /// pings and the route's handler, with `request` as the route or the middleware passed it on).
    /// Loop thread, never inside a task (a task would keep its frames while the protocol lives).
    func start(_ handler: Handler, request: HTTPServerRequest, context: HTTPLoopContext)

    /// The shortest deadline the new protocol's handler keeps (for WebSocket: its ping interval, ping
    /// timeout and close timeout), which it checks when the loop's registry sweeps it
    /// (``ConnectionHandler/checkDeadlines(_:now:)``): the server sweeps at least four times within it
    /// (no faster than every 5 ms). Nil (the default) when it keeps none shorter than the server's own.
    /// Any thread.
    var shortestDeadline: Duration? { get }
}

extension HTTPUpgrader {
    /// None shorter than the server's own deadlines. Any thread.
    public var shortestDeadline: Duration? { nil }
}
