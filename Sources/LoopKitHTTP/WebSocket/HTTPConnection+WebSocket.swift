import HTTPTypes
import LoopKit
import LoopKitNet

extension HTTPConnection {
    /// A request for a WebSocket route, its head complete: check the handshake, ask the route, then
    /// write the `101` and hand the connection to a ``WebSocket`` (or answer the refusal as HTTP).
    /// Loop thread.
    func webSocketRequested(_ request: HTTPServerRequest, head: HTTPRequestHead, route: WebSocketRoute) {
        let key: String
        switch WebSocketHandshake.validate(head.request, version: head.version, framing: head.framing) {
        case .failure(let refusal):
            send(refusal.response)
            return
        case .success(let valid):
            key = valid
        }
        let deflate = route.configuration.allowsCompression
            ? PerMessageDeflate.negotiate(head.request.headerFields[values: WebSocketHandshake.extensionsField],
                                          serverNoContextTakeover: route.configuration.serverNoContextTakeover)
            : nil
        tcp.pauseReading()  // what the client sends after the request belongs to the socket
        let loop = context.loop
        let logger = context.logger
        Task(executorPreference: loop) {
            var decision = WebSocketUpgradeDecision.accept
            if let shouldUpgrade = route.shouldUpgrade {
                do {
                    decision = try await shouldUpgrade(request)
                } catch {
                    logger.error("WebSocket upgrade check failed", metadata: ["path": "\(request.path)", "error": "\(error)"])
                    decision = .refuse(.text("Internal Server Error", status: .internalServerError))
                }
            }
            let fields: HTTPFields
            switch decision.kind {
            case .refuse(let response):
                self.onLoop { $0.send(response) }
                return
            case .accept(let accepted):
                fields = accepted
            }
            await self.upgradeAndRun(request, key: key, head: head, route: route, fields: fields, deflate: deflate)
        }
    }

    /// A request for a WebSocket route behind middleware: the chain runs as a task on the loop, its
    /// terminal checks the handshake and asks the route, and answers `101` (with the route's fields) to
    /// accept; a middleware may answer first (401), look at the request, or add fields to the `101`.
    /// When what comes out is a `101`, the connection upgrades and the handler gets the request as the
    /// middleware passed it on; any other response is sent as HTTP. Loop thread.
    func webSocketRequested(_ request: HTTPServerRequest, head: HTTPRequestHead, route: WebSocketRoute,
                            middleware: HTTPMiddlewareChain) {
        let validation = WebSocketHandshake.validate(head.request, version: head.version, framing: head.framing)
        let key: String?
        let refusal: HTTPServerResponse?
        switch validation {
        case .success(let accepted):
            key = accepted
            refusal = nil
        case .failure(let refused):  // answered below, through the middleware, as the route's refusal
            key = nil
            refusal = refused.response
        }
        let deflate = key != nil && route.configuration.allowsCompression
            ? PerMessageDeflate.negotiate(head.request.headerFields[values: WebSocketHandshake.extensionsField],
                                          serverNoContextTakeover: route.configuration.serverNoContextTakeover)
            : nil
        tcp.pauseReading()  // what the client sends after the request belongs to the socket
        let trail = HTTPMiddlewareChain.Trail()
        asyncTrail = trail
        let logger = context.logger
        Task(executorPreference: context.loop) {
            let response = await Self.respond(to: request, through: middleware, trail: trail, logger: logger) { request in
                if let refusal { return refusal }
                var decision = WebSocketUpgradeDecision.accept
                if let shouldUpgrade = route.shouldUpgrade { decision = try await shouldUpgrade(request) }
                switch decision.kind {
                case .refuse(let response): return response
                case .accept(let fields): return HTTPServerResponse(status: .switchingProtocols, headerFields: fields)
                }
            }
            guard let response else { return }
            guard response.head.status == .switchingProtocols else {
                self.onLoop { $0.send(response) }
                return
            }
            guard let key else {  // a middleware answered 101 to a request that is no upgrade
                self.onLoop { $0.send(.text("Internal Server Error", status: .internalServerError)) }
                return
            }
            let upgradedRequest = trail.state.withLock { $0.request } ?? request
            await self.upgradeAndRun(upgradedRequest, key: key, head: head, route: route, fields: response.head.headerFields,
                                     deflate: deflate)
        }
    }

    /// Writes the `101`, hands the socket to the route's handler, and closes it when an async handler returns.
    private func upgradeAndRun(_ request: HTTPServerRequest, key: String, head: HTTPRequestHead, route: WebSocketRoute,
                               fields: HTTPFields, deflate: PerMessageDeflate?) async {
        let loop = context.loop
        let logger = context.logger
        let upgraded: WebSocket?
        do {
            upgraded = try await loop.perform { () -> WebSocket? in
                guard let socket = self.upgrade(key: key, head: head, route: route, fields: fields, deflate: deflate) else { return nil }
                if case .callback(let run) = route.handler { run(request, socket) }
                return socket
            }
        } catch {
            return  // the loop shut down, and the connection with it
        }
        guard let socket = upgraded, case .async(let run) = route.handler else { return }
        var code = WebSocketCloseCode.normalClosure
        do {
            try await run(request, socket)
        } catch {
            logger.error("WebSocket handler failed", metadata: ["path": "\(request.path)", "error": "\(error)"])
            code = .internalServerError
        }
        do {
            try await loop.perform { [code] in socket.close(code: code) }
        } catch {
            // The loop shut down, and the connection with it.
        }
    }

    /// Writes the `101` and turns the connection into a WebSocket; nil when the client has gone.
    private func upgrade(key: String, head: HTTPRequestHead, route: WebSocketRoute, fields: HTTPFields,
                         deflate: PerMessageDeflate?) -> WebSocket? {
        guard !isClosed else { return nil }
        flush()
        var fields = fields
        if let field = context.configuration.requestIDField, let requestContext, fields[field] == nil {
            fields[field] = requestContext.id
        }
        let response = WebSocketHandshake.switchingProtocols(acceptValue: WebSocketHandshake.acceptValue(forKey: key),
                                                              extensions: deflate?.responseValue, extraFields: fields)
        let written = response.withUnsafeBytes { bytes in Result { () throws(NetError) in try tcp.write(copying: bytes) } }
        guard case .success = written else { return nil }
        logAccess(head, status: 101)
        responseStatus = .switchingProtocols
        requestEnded(isComplete: true)  // the request is over; the socket lives on
        self.head = nil
        responseStarted = false
        machine.upgraded()
        let socket = WebSocket(tcp: tcp, configuration: route.configuration, deflate: deflate)
        webSocket = socket
        socket.core.value.start()
        return socket
    }
}
