import HTTPTypes
import LoopKit
import LoopKitNet

extension HTTPConnection {
    /// A request for an upgrade route, its head complete: check the head, ask the route when the
    /// upgrader asks it, then write the `101` and hand the connection over (or answer the refusal as
    /// HTTP). Loop thread.
    func upgradeRequested<Upgrader: HTTPUpgrader>(_ request: HTTPServerRequest, head: HTTPRequestHead,
                                                  upgrader: Upgrader) {
        let acceptance: Upgrader.Acceptance
        switch upgrader.check(head) {
        case .refused(let response):
            send(response)
            return
        case .accepted(let accepted):
            acceptance = accepted
        }
        tcp.pauseReading()  // what the client sends after the request belongs to the new protocol
        guard upgrader.asksRoute else {
            // Nothing to ask the route: upgrade from a job in this iteration's drain, where a task would
            // have started, with no task for it.
            do {
                try context.loop.enqueue {
                    self.upgrade(request, head: head, upgrader: upgrader, acceptance: acceptance, fields: [:])
                }
            } catch {
                // Refused: the loop is shutting down, and its shutdown ends this connection.
            }
            return
        }
        let logger = context.logger
        context.startTask {
            let decision: HTTPUpgradeDecision
            do {
                decision = try await upgrader.shouldUpgrade(request)
            } catch {
                decision = .refuse(.answering(error, path: request.path, logger: logger))
            }
            switch decision {
            case .refuse(let response):
                self.onLoop { $0.send(response) }
            case .accept(let fields):
                self.onLoop {
                    $0.upgrade(request, head: head, upgrader: upgrader, acceptance: acceptance, fields: fields)
                }
            }
        }
    }

    /// A request for an upgrade route behind middleware: the chain runs as a task on the loop, its
    /// terminal checks the head and asks the route, and answers `101` (with the route's fields) to
    /// accept; a middleware may answer first (401), look at the request, or add fields to the `101`.
    /// When what comes out is a `101`, the connection upgrades and the new protocol gets the request as
    /// the middleware passed it on; any other response is sent as HTTP. Loop thread.
    func upgradeRequested<Upgrader: HTTPUpgrader>(_ request: HTTPServerRequest, head: HTTPRequestHead,
                                                  upgrader: Upgrader, middleware: HTTPMiddlewareChain) {
        let acceptance: Upgrader.Acceptance?
        let refusal: HTTPServerResponse?
        switch upgrader.check(head) {
        case .accepted(let accepted):
            acceptance = accepted
            refusal = nil
        case .refused(let response):  // answered below, through the middleware, as the route's refusal
            acceptance = nil
            refusal = response
        }
        tcp.pauseReading()  // what the client sends after the request belongs to the new protocol
        let trail = HTTPMiddlewareChain.Trail(chain: middleware)
        asyncTrail = trail
        let logger = context.logger
        context.startTask {
            let response = await Self.respond(to: request, through: middleware, trail: trail, logger: logger) { request in
                if let refusal { return refusal }
                let decision = upgrader.asksRoute ? try await upgrader.shouldUpgrade(request) : .accept([:])
                switch decision {
                case .refuse(let response): return response
                case .accept(let fields): return HTTPServerResponse(status: .switchingProtocols, headerFields: fields)
                }
            }
            guard let response else { return }
            guard response.head.status == .switchingProtocols else {
                self.onLoop { $0.send(response) }
                return
            }
            guard let acceptance else {  // a middleware answered 101 to a request that is no upgrade
                self.onLoop { $0.send(.text("Internal Server Error", status: .internalServerError)) }
                return
            }
            let upgradedRequest = trail.state.withLock { $0.request } ?? request
            let fields = response.head.headerFields
            self.onLoop {
                $0.upgrade(upgradedRequest, head: head, upgrader: upgrader, acceptance: acceptance, fields: fields)
            }
        }
    }

    /// Writes the `101` and hands the connection over: the new protocol's handler becomes the TCP
    /// connection's (lent the bytes read after the request; the TCP connection stays in the loop's
    /// registry, counted once, drained and swept through its handler), and the protocol starts. Nothing
    /// holds this HTTP connection any more: it is released once its caller returns. Nothing happens when
    /// the client has gone. Loop thread.
    ///
    /// The upgrade itself never runs in a task of the new protocol's: a task keeps the async frames of
    /// everything it is inside while it waits, and an idle WebSocket's handler waits for as long as it
    /// is open. Run from the task that asked `shouldUpgrade` or ran the middleware, the upgrade kept
    /// those frames too (Swift's task allocator held three 1 KiB slabs per idle WebSocket of `/ws/echo`
    /// then, one now: the task's executor preference and the handler's frames share it).
    private func upgrade<Upgrader: HTTPUpgrader>(_ request: HTTPServerRequest, head: HTTPRequestHead, upgrader: Upgrader,
                                                 acceptance: Upgrader.Acceptance, fields: HTTPFields) {
        guard !isClosed else { return }
        var fields = fields
        if let field = context.configuration.requestIDField, let requestContext, fields[field] == nil {
            fields[field] = requestContext.id
        }
        let response = upgrader.switchingProtocols(acceptance, fields: fields)
        let written = response.withUnsafeBytes { bytes in Result { () throws(NetError) in try tcp.write(copying: bytes) } }
        guard case .success = written else { return }
        logAccess(head, status: 101)
        responseStatus = .switchingProtocols
        requestEnded(isComplete: true)  // the request is over; the socket lives on
        self.head = nil
        responseStarted = false
        machine.upgraded()
        isClosed = true
        let context = context
        let handler = upgrader.takeOver(tcp, acceptance: acceptance, context: context)
        tcp.replaceHandler(handler)
        tcp.resumeReading()
        upgrader.start(handler, request: request, context: context)
    }
}
