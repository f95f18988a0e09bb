import HTTPTypes
import LoopKit

extension HTTPDispatcher {
    /// A request for an upgrade route, its head complete: the upgrader checks the head; the route is asked
    /// when the upgrader asks it (a task, ``askRoute(_:upgrader:acceptance:on:)``), or the middleware chain
    /// runs with the upgrade as its terminal (``runUpgradeChain(_:upgrader:check:middleware:on:)``); then
    /// ``upgradeAccepted(_:upgrader:acceptance:fields:on:)`` writes the `101` and the codec hands the
    /// connection over, or the refusal is answered as HTTP. Loop thread.
    static func upgradeRequested<Upgrader: HTTPUpgrader>(_ request: HTTPServerRequest, upgrader: Upgrader,
                                                         middleware: HTTPMiddlewareChain?, on stream: some HTTPStream) {
        guard stream.exchange != nil else { return }
        let check = upgrader.check(stream.exchange!.head)
        if let middleware {
            stream.pauseReading()  // what the client sends after the request belongs to the new protocol
            runUpgradeChain(request, upgrader: upgrader, check: check, middleware: middleware, on: stream)
            return
        }
        let acceptance: Upgrader.Acceptance
        switch check {
        case .refused(let response):
            send(response, on: stream)
            return
        case .accepted(let accepted):
            acceptance = accepted
        }
        stream.pauseReading()  // what the client sends after the request belongs to the new protocol
        guard upgrader.asksRoute else {
            // Nothing to ask the route: upgrade from a job in this iteration's drain, where a task would
            // have started, with no task for it.
            do {
                try stream.context.loop.enqueue {
                    upgradeAccepted(request, upgrader: upgrader, acceptance: acceptance, fields: [:], on: stream)
                }
            } catch {
                // Refused: the loop is shutting down, and its shutdown ends this connection.
            }
            return
        }
        askRoute(request, upgrader: upgrader, acceptance: acceptance, on: stream)
    }
}
