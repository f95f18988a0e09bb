import HTTPTypes
import Logging
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
        guard let shouldUpgrade = route.shouldUpgrade else {
            // Nothing to ask the route: upgrade from a job in this iteration's drain, where a task would
            // have started, with no task for it.
            do {
                try context.loop.enqueue {
                    self.upgradeAndStart(request, key: key, head: head, route: route, fields: [:], deflate: deflate)
                }
            } catch {
                // Refused: the loop is shutting down, and its shutdown ends this connection.
            }
            return
        }
        let logger = context.logger
        Task(executorPreference: context.loop) {
            let decision: WebSocketUpgradeDecision
            do {
                decision = try await shouldUpgrade(request)
            } catch {
                decision = .refuse(.answering(error, path: request.path, logger: logger))
            }
            switch decision.kind {
            case .refuse(let response):
                self.onLoop { $0.send(response) }
            case .accept(let fields):
                self.onLoop {
                    $0.upgradeAndStart(request, key: key, head: head, route: route, fields: fields, deflate: deflate)
                }
            }
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
        let trail = HTTPMiddlewareChain.Trail(chain: middleware)
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
            let fields = response.head.headerFields
            self.onLoop {
                $0.upgradeAndStart(upgradedRequest, key: key, head: head, route: route, fields: fields, deflate: deflate)
            }
        }
    }

    /// Writes the `101` and hands the socket to the route's handler: a callback handler runs now, an async
    /// one in a task of its own (``runHandler(_:request:socket:loop:logger:)``). Loop thread.
    ///
    /// The upgrade itself never runs in the handler's task: a task keeps the async frames of everything
    /// it is inside while it waits, and an idle WebSocket's handler waits for as long as it is open. Run
    /// from the task that asked `shouldUpgrade` or ran the middleware, the upgrade kept those frames too
    /// (Swift's task allocator held three 1 KiB slabs per idle WebSocket of `/ws/echo` then, one now: the
    /// task's executor preference and the handler's frames share it).
    private func upgradeAndStart(_ request: HTTPServerRequest, key: String, head: HTTPRequestHead, route: WebSocketRoute,
                                 fields: HTTPFields, deflate: PerMessageDeflate?) {
        guard let socket = upgrade(key: key, head: head, route: route, fields: fields, deflate: deflate) else { return }
        switch route.handler {
        case .callback(let run):
            run(request, socket)
        case .async(let run):
            Self.runHandler(run, request: request, socket: socket, loop: context.loop, logger: context.logger)
        }
    }

    /// Runs an async WebSocket handler as a task on `loop`, and closes the socket when it returns (with
    /// `1011` when it threw).
    ///
    /// The task's own frame stays small, as its frame is kept while the handler waits: the task holds the
    /// handler, its arguments, the loop and the logger, and what follows the handler (the log line, the
    /// close) is ``handlerEnded(_:request:error:loop:logger:)``, not async. With that work in the task's
    /// frame, the frame took so much of the task allocator's first slab that the handler's frames needed
    /// a second (1 KiB more per idle WebSocket).
    private static func runHandler(_ run: @escaping @Sendable (HTTPServerRequest, WebSocket) async throws -> Void,
                                   request: HTTPServerRequest, socket: WebSocket, loop: EventLoop, logger: Logger) {
        Task(executorPreference: loop) {
            let failure: (any Error)?
            do {
                try await run(request, socket)
                failure = nil
            } catch {
                failure = error
            }
            handlerEnded(socket, request: request, error: failure, loop: loop, logger: logger)
        }
    }

    /// An async handler returned (`error` nil) or threw: closes `socket` with `1000` or `1011` through
    /// `loop.invoke`, at once on the loop's thread (where a handler's task runs, by its executor
    /// preference), else queued.
    private static func handlerEnded(_ socket: WebSocket, request: HTTPServerRequest, error: (any Error)?, loop: EventLoop,
                                     logger: Logger) {
        var code = WebSocketCloseCode.normalClosure
        if let error {
            logger.error("WebSocket handler failed", metadata: ["path": "\(request.path)", "error": "\(error)"])
            code = .internalServerError
        }
        do {
            try loop.invoke { [code] in socket.close(code: code) }
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
        // The hand-over: the WebSocket's engine becomes the TCP connection's handler (with the bytes read
        // after the request); the TCP connection stays in the loop's registry, counted once, drained and
        // swept through its handler. Nothing holds this HTTP connection any more: it is released once its
        // caller returns.
        isClosed = true
        let socket = WebSocket(tcp: tcp, configuration: route.configuration, deflate: deflate)
        socket.core.value.served = ServedWebSocket(handle: socket)
        socket.core.value.start()
        return socket
    }
}
