import HTTPTypes
import LoopKit
import Tracing

/// The one dispatcher between a codec and the routes: a codec hands it a request head (and, for a route
/// that collects its body, the body) and takes a response back to encode. Here, and nowhere in a codec,
/// are the router's lookup, the one switch over handler kinds (``run(_:_:streamedBody:middleware:on:)``),
/// middleware, every `Task` a request starts (`HTTPDispatcher+Tasks.swift`), errors turned into
/// responses (`HTTPDispatcher+Errors.swift`) and the request's lifecycle (`HTTPRequestLifecycle.swift`:
/// its context, span, access line and the middleware's `responseEnded`).
///
/// It answers on an ``HTTPStream``: what a codec gives it for one stream of requests. What it keeps per
/// request is an ``HTTPExchange`` the stream holds for it (``HTTPStream/exchange``), made at the head and
/// ended once. The HTTP/1 codec (``HTTPConnection``) is the one stream today, serving its requests one at a
/// time; an HTTP/2 codec's streams will be others. Every function is generic over the stream, so each
/// codec gets code specialised for it (no existential on the inline fast path).
///
/// Loop thread: every function runs on the stream's loop (the tasks it starts run there too, and come
/// back through ``HTTPStream/onLoop(_:)``).
enum HTTPDispatcher {
    /// How the codec is to read the body of a request whose head arrived.
    struct BodyPlan {
        /// The most body bytes the route takes (nil: no limit): past it the codec refuses with 413.
        var limit: Int?
        /// The handler reads the body as it arrives: the codec makes an ``HTTPRequestBody`` and calls
        /// ``bodyStreaming(_:on:)``; otherwise it collects the body and calls ``bodyCollected(_:on:)``.
        var streams: Bool
    }

    // MARK: From the codec

    /// A request head arrived: route it and begin its exchange. Loop thread.
    static func headArrived(_ head: HTTPRequestHead, on stream: some HTTPStream) -> BodyPlan {
        let context = stream.context
        let router = context.router
        let target = head.target
        let path = head.path
        let routed: Substring = head.method == .options && target == "*" ? "*" : path
        let exchange = HTTPExchange.begin(head, id: givenRequestID(in: head, context: context), context: context,
                                          reusing: &stream.spareExchange)
        stream.exchange = exchange
        // The route's parts are read out of the router's table one by one: a lookup result holding them
        // all was copied field by field through the runtime's value witnesses.
        let plan: BodyPlan
        if let found = router.matchRoute(head.method, path: routed) {
            let handler = router.routes[found.index].handler
            plan = BodyPlan(limit: handler.bodyLimit ?? context.configuration.maxBodySize, streams: handler.streamsBody)
            exchange.routed(to: handler, parameters: found.parameters, chain: router.routes[found.index].chain,
                            pattern: router.routes[found.index].pattern)
        } else {
            plan = BodyPlan(limit: context.configuration.maxBodySize, streams: false)
            exchange.unmatched(router.unrouted(head.method, path: routed))
        }
        if context.isTracing { traceRequest(in: exchange, path: path, context: context) }
        return plan
    }

    /// The head of a streaming route's request arrived and its body is about to: the handler starts now.
    /// Loop thread.
    static func bodyStreaming(_ body: HTTPRequestBody, on stream: some HTTPStream) {
        guard let exchange = stream.exchange, let handler = exchange.handler else { return }
        run(handler, makeRequest(body: [], parameters: exchange.parameters, on: stream), streamedBody: body,
            middleware: exchange.chain ?? stream.context.router.middleware, on: stream)
    }

    /// The body of a request whose route collects it has arrived, all of it: run the handler (or answer
    /// the request no route took). Loop thread.
    ///
    /// The head stays in the exchange, read in place: a local copy of it would retain, and then release,
    /// each of its fields once more per request.
    static func bodyCollected(_ body: Bytes, on stream: some HTTPStream) {
        guard let exchange = stream.exchange else { return }
        let context = stream.context
        let middleware = exchange.chain ?? context.router.middleware
        guard let handler = exchange.handler.take() else {
            let answer = response(for: exchange.unrouted, renderer: context.configuration.errorRenderer)
            guard !middleware.isEmpty else {
                send(answer, on: stream)
                return
            }
            let request = makeRequest(body: body, parameters: HTTPPathParameters(), on: stream)
            if middleware.isInline {
                runInline(request, middleware: middleware, terminal: { _ in answer }, on: stream)
            } else {
                stream.pauseReading()
                runChain(request, middleware: middleware, terminal: { _ in answer }, bodyCollected: true, on: stream)
            }
            return
        }
        if case .sync(let run) = handler, middleware.isEmpty {
            // The inline fast path: the request is made as the call's argument and destroyed after it,
            // once; bound to a name first, it was copied and the copy destroyed (about 300 instructions).
            let response: HTTPServerResponse
            do {
                response = try run(makeRequest(body: body, parameters: exchange.parameters, on: stream))
            } catch {
                response = answering(error, path: exchange.head.path, logger: context.logger,
                                     renderer: context.configuration.errorRenderer)
            }
            send(response, on: stream)
            return
        }
        let request = makeRequest(body: body, parameters: exchange.parameters, on: stream)
        run(handler, consume request, streamedBody: nil, middleware: middleware, on: stream)
    }

    /// The request of the exchange, as a handler gets it.
    @inline(__always)
    private static func makeRequest(body: Bytes, parameters: HTTPPathParameters, on stream: some HTTPStream) -> HTTPServerRequest {
        HTTPServerRequest.of(stream.exchange!, body: body, parameters: parameters, server: stream.context)
    }

    // MARK: The one switch

    /// Runs `handler` for `request`, through `middleware` when it has any: the one place that tells handler
    /// kinds apart. A synchronous handler with no middleware, or only inline middleware, answers at once,
    /// inside the read callback that parsed the request, with no task; every other kind starts a task
    /// (`HTTPDispatcher+Tasks.swift`) or an upgrade. Loop thread.
    ///
    /// Inlined into its two callers: called, the request it consumes was copied once more and the copy
    /// destroyed on the way in (about 100 instructions a request).
    @inline(__always)
    private static func run(_ handler: HTTPHandler, _ request: consuming HTTPServerRequest, streamedBody: HTTPRequestBody?,
                            middleware: HTTPMiddlewareChain, on stream: some HTTPStream) {
        switch handler {
        case .sync(let run):
            if middleware.isEmpty {
                // The inline fast path: no task, no allocation beyond the request's own.
                let response: HTTPServerResponse
                do {
                    response = try run(request)
                } catch {
                    response = answering(error, path: request.path, logger: stream.context.logger,
                                         renderer: stream.context.configuration.errorRenderer)
                }
                send(response, on: stream)
            } else if middleware.isInline {
                runInline(request, middleware: middleware, terminal: run, on: stream)
            } else {
                stream.pauseReading()
                runChain(request, middleware: middleware, terminal: { request in try run(request) }, bodyCollected: true, on: stream)
            }
        case .async(let run):
            stream.pauseReading()
            if middleware.isEmpty {
                runAsyncHandler(run, request, on: stream)
            } else {
                runChain(request, middleware: middleware, terminal: run, bodyCollected: true, on: stream)
            }
        case .streaming(_, let run):
            guard let body = streamedBody else { return }  // started at the head, never here
            if middleware.isEmpty {
                runStreamingHandler(run, request, body: body, on: stream)
            } else {
                runChain(request, middleware: middleware, terminal: { request in try await run(request, body) }, on: stream)
            }
        case .streamingCallback(_, let run):
            guard let body = streamedBody else { return }  // started at the head, never here
            if middleware.isEmpty {
                run(request, body, stream.responder(slot: nil))
            } else {
                runChain(request, middleware: middleware, terminal: awaitingResponder(run, body: body, on: stream), on: stream)
            }
        case .webSocket(let webSocketRoute):
            upgradeRequested(request, upgrader: WebSocketUpgrader(route: webSocketRoute, renderer: stream.context.configuration.errorRenderer),
                             middleware: middleware.isEmpty ? nil : middleware, on: stream)
        case .upgrade(let upgradeRoute):
            upgradeRoute.upgrader.requested(request, on: stream, middleware: middleware.isEmpty ? nil : middleware)
        case .inlineOrTask(let route):
            if middleware.isEmpty {
                // Inline when the route can answer now; else as an async route.
                let response: HTTPServerResponse?
                do {
                    response = try route.inline(request)
                } catch {
                    response = answering(error, path: request.path, logger: stream.context.logger,
                                         renderer: stream.context.configuration.errorRenderer)
                }
                if let response {
                    send(response, on: stream)
                } else {
                    stream.pauseReading()
                    runAsyncHandler(route.inTask, request, on: stream)
                }
            } else if middleware.isInline {
                runInlineOrTask(request, middleware: middleware, route: route, on: stream)
            } else {
                stream.pauseReading()
                runChain(request, middleware: middleware, terminal: { request in
                    if let response = try route.inline(request) { return response }
                    return try await route.inTask(request)
                }, bodyCollected: true, on: stream)
            }
        }
    }

    // MARK: Responses

    /// Sends a response for the exchange's request, once (a second response for it is dropped): the
    /// access line, the status for the lifecycle, the request id echoed; then the codec encodes it, and a
    /// streamed body's task starts. Loop thread.
    static func send(_ response: HTTPServerResponse, on stream: some HTTPStream) {
        guard !stream.isClosed, stream.exchange != nil, !stream.exchange!.responseStarted else { return }
        stream.exchange!.responseStarted = true
        let sentStatus = response.status
        logAccess(status: sentStatus.code, on: stream)
        stream.exchange!.responseStatus = sentStatus
        let echoedID = echoedRequestID(on: stream)
        let isHead = stream.exchange!.head.method == .head
        let version = stream.exchange!.head.version
        guard let streamed = response.body.streamed else {
            stream.writeResponse(status: sentStatus, fields: response.headerFields, encoded: response.encodedFields, body: response.body.bytes,
                                 isHead: isHead, version: version, echoedID: echoedID)
            return
        }
        guard let writer = stream.writeStreamedResponseHead(status: sentStatus, fields: response.headerFields, isHead: isHead, version: version,
                                                            echoedID: echoedID, watchesClient: streamed.watchesClient) else { return }
        writeBody(streamed.write, to: writer, watchesClient: streamed.watchesClient, on: stream)
    }

    /// A callback-form route's responder delivers its response: into the middleware chain waiting for it
    /// (`slot`), or sent. Loop thread.
    static func respond(_ response: HTTPServerResponse, slot: HTTPResponseSlot?, on stream: some HTTPStream) {
        guard let slot else {
            send(response, on: stream)
            return
        }
        if let extras = stream.exchange?.extras, extras.responseSlot === slot { extras.responseSlot = nil }
        slot.resume(.success(response))
    }

    /// Whether the exchange's response has begun (a codec then aborts rather than answer again).
    static func hasResponded(on stream: some HTTPStream) -> Bool {
        stream.exchange?.responseStarted ?? false
    }

    // MARK: The stream's end

    /// The codec's connection closed (either side, or an error): the streamed body's task is cancelled, a
    /// chain awaiting a responder is failed, and the exchange ends incomplete. Loop thread.
    static func streamClosed(on stream: some HTTPStream) {
        guard stream.exchange != nil else { return }
        stream.exchange!.responseTask?.cancel()  // a streamed body waiting for something other than the client ends now
        stream.exchange!.responseTask = nil
        if let slot = stream.exchange!.extras?.responseSlot {
            stream.exchange!.extras!.responseSlot = nil
            slot.resume(.failure(HTTPBodyError.connectionClosed))
        }
        exchangeEnded(on: stream, isComplete: false)
    }

    /// Graceful shutdown reached a stream that is answering: an event stream has no end to wait for, so its
    /// task is cancelled, and its body terminated when the writer returns or throws (a client's
    /// `EventSource` reconnects elsewhere). Loop thread.
    static func shutdownRequested(on stream: some HTTPStream) {
        guard stream.exchange?.streamsEvents == true, let responseTask = stream.exchange!.responseTask,
              !stream.exchange!.eventStreamEndedByShutdown else { return }
        stream.exchange!.eventStreamEndedByShutdown = true
        responseTask.cancel()
    }
}

extension HTTPHandler {
    /// The most body bytes the handler takes, when it sets its own limit (a streaming route's); nil when
    /// the server's limit applies.
    var bodyLimit: Int?? {
        switch self {
        case .streaming(let limit, _), .streamingCallback(let limit, _): limit
        case .sync, .async, .webSocket, .upgrade, .inlineOrTask: nil
        }
    }
}
