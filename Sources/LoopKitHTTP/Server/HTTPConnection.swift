import HTTPTypes
import Logging
import LoopKit
import LoopKitNet
import Tracing

/// One HTTP/1.1 connection: parses straight out of the TCP connection's inbound bytes (lent in place by
/// its read callback), runs handlers on the loop, and writes each batch of responses with one write.
///
/// Loop-confined: created, used and released on its loop's thread. It is `@unchecked Sendable` only so
/// the tasks of async handlers and streamed bodies (which run on the same loop's executor) can hold it;
/// every entry point checks it runs on the loop (in debug builds).
final class HTTPConnection: ConnectionHandler, @unchecked Sendable {  // loop-confined: its tasks run on its loop
    let context: HTTPLoopContext
    let tcp: Connection
    @exclusivity(unchecked) var machine = HTTPConnectionStateMachine()
    @exclusivity(unchecked) var parser: HTTPRequestParser
    // The per-request state below is loop-confined, like the connection: `@exclusivity(unchecked)` spares
    // each access a runtime exclusivity check (a `swift_beginAccess` per access on the hot path).
    /// The head of the request being read or answered.
    @exclusivity(unchecked) var head: HTTPRequestHead?
    /// The body of the request being read, as the reads copied it out of the read buffer (joined into
    /// one ``Bytes`` for the handler: no second copy when it came in one read).
    @exclusivity(unchecked) var bodyParts: [Bytes] = []
    /// The bytes in ``bodyParts``.
    @exclusivity(unchecked) var bodyCount = 0
    /// When the current state began, on the loop's clock: what its deadline (head, body, idle) counts
    /// from. Stamped by ``stateBegan()``.
    var stateSince: UInt64 = 0
    /// The route of the request being read (nil: none matched).
    @exclusivity(unchecked) var route: RouteMatch?

    /// A route that took a request: its handler and the parameters it bound. A struct, not a tuple, so
    /// that copying the optional of it is specialised code rather than the runtime's tuple witnesses.
    struct RouteMatch {
        var handler: HTTPHandler
        var parameters: HTTPPathParameters
    }
    /// What the request resolved to when no route took it (404, 405, OPTIONS, 501).
    @exclusivity(unchecked) var unrouted = HTTPRouter.Resolution.notFound
    /// The body of a streaming route's request, while it arrives.
    @exclusivity(unchecked) var streamedBody: HTTPRequestBody?
    /// The current request's response has begun (its head is written).
    var responseStarted = false
    /// Set when the TCP connection has closed.
    var isClosed = false
    /// The task writing a streamed response body, until it ends; cancelled when the connection closes.
    @exclusivity(unchecked) private var responseTask: Task<Void, Never>?
    /// The streamed body is an event stream (``HTTPServerResponse/events(keepAlive:_:)``): open-ended, so
    /// graceful shutdown ends it rather than wait for it.
    private var streamsEvents = false
    /// Graceful shutdown cancelled the event stream's task: however its writer ends (returning, or throwing
    /// the cancellation), the body is terminated cleanly and the connection closes.
    private var eventStreamEndedByShutdown = false

    /// True while `receive` runs (what it writes goes out with the read callback's batch, and parsing
    /// goes on there).
    private var isReceiving = false
    /// The state changed while `receive` ran: it is stamped once, as `receive` returns.
    private var stateChangedWhileReceiving = false
    /// The current request's id, start, route and trace context, from its head until its response ends.
    @exclusivity(unchecked) var requestContext: HTTPRequestContext?

    /// The status sent for the current request, and its body bytes handed to the connection so far.
    @exclusivity(unchecked) var responseStatus: HTTPResponse.Status?
    @exclusivity(unchecked) var responseBodyBytes = 0

    /// State that a plain request never needs (tracing, middleware, a WebSocket, a callback route's
    /// answer awaited by middleware), kept out of the connection object so that an idle keep-alive
    /// connection stays small; made on first use.
    final class Extras {
        /// The current request's server span, when a tracer is on; ended with the response.
        var span: (any Span)?
        /// Behind an inline chain: the request as the middleware left it and how many it reached (their
        /// `responseEnded` is owed).
        var middlewareTrail: HTTPMiddlewareChain.InlineTrail?
        /// Behind a chain with async middleware: the same, filled as the request goes down the chain.
        var asyncTrail: HTTPMiddlewareChain.Trail?
        /// A callback-form streaming route's answer, awaited by the middleware chain.
        var responseSlot: HTTPResponseSlot?
    }

    @exclusivity(unchecked) private var extrasStorage: Extras?

    private var extras: Extras {
        if let extrasStorage { return extrasStorage }
        let made = Extras()
        extrasStorage = made
        return made
    }

    var span: (any Span)? {
        get { extrasStorage?.span }
        set { if newValue != nil || extrasStorage != nil { extras.span = newValue } }
    }

    /// Keeps an inline chain's trail until the response ends.
    func setMiddlewareTrail(_ trail: HTTPMiddlewareChain.InlineTrail) {
        extras.middlewareTrail = trail
    }

    /// Takes the trail kept for the current request, inline or async, leaving none.
    func takeMiddlewareTrail() -> HTTPMiddlewareChain.InlineTrail? {
        guard let extrasStorage else { return nil }
        if let trail = extrasStorage.middlewareTrail.take() { return trail }
        guard let asyncTrail = extrasStorage.asyncTrail else { return nil }
        extrasStorage.asyncTrail = nil
        return asyncTrail.take()
    }

    var asyncTrail: HTTPMiddlewareChain.Trail? {
        get { extrasStorage?.asyncTrail }
        set { if newValue != nil || extrasStorage != nil { extras.asyncTrail = newValue } }
    }

    var responseSlot: HTTPResponseSlot? {
        get { extrasStorage?.responseSlot }
        set { if newValue != nil || extrasStorage != nil { extras.responseSlot = newValue } }
    }


    init(context: HTTPLoopContext, tcp: Connection) {
        self.context = context
        self.tcp = tcp
        var limits = context.configuration.limits
        limits.maxBodySize = .max  // bodies are limited here, per route (a streaming route has its own limit)
        parser = HTTPRequestParser(limits: limits)
        stateSince = context.now
    }

    /// Becomes the TCP connection's handler. The TCP connection holds its handler, and so this
    /// connection, until it closes or is handed to another protocol (an upgrade): the HTTP connection
    /// lives exactly as long as it serves HTTP.
    func start() {
        tcp.setHandler(self)
    }

    func connection(_ connection: Connection, received bytes: UnsafeRawBufferPointer) -> Int {
        guard machine.canParse else { return 0 }
        return receive(bytes)
    }

    func connection(_ connection: Connection, closedWith reason: CloseReason) {
        closed()
    }

    /// The TCP connection has ended (either side, or an error); its streamed-body writers are resumed by it.
    private func closed() {
        guard !isClosed else { return }
        isClosed = true
        responseTask?.cancel()  // a streamed body waiting for something other than the client ends now
        responseTask = nil
        machine.transportClosed()
        if let responseSlot {
            self.responseSlot = nil
            responseSlot.resume(.failure(HTTPBodyError.connectionClosed))
        }
        if requestContext != nil { requestEnded(isComplete: false) }
        if let streamedBody {
            self.streamedBody = nil
            streamedBody.end(.failure(.connectionClosed))
        }
    }

    // MARK: Parsing

    /// Parses and answers as many requests as the bytes hold; returns how many bytes were consumed.
    private func receive(_ bytes: UnsafeRawBufferPointer) -> Int {
        if machine.isLingering { return bytes.count }  // after an early answer: read and drop
        isReceiving = true
        defer {
            isReceiving = false
            if stateChangedWhileReceiving {
                stateChangedWhileReceiving = false
                stateSince = context.now
            }
        }
        var offset = 0
        if machine.isIdle && !bytes.isEmpty {
            machine.bytesArrived()
            stateBegan()
        }
        while machine.canParse {
            if let streamedBody, !streamedBody.hasRoom { return offset }  // the handler is behind: backpressure
            let event: HTTPRequestParser.Event, consumed: Int
            do {
                (event, consumed) = try parser.parse(UnsafeRawBufferPointer(rebasing: bytes[offset...]))
            } catch {
                refuse(error)
                return bytes.count
            }
            let start = offset
            offset += consumed
            switch event {
            case .needMoreBytes:
                return offset
            case .head(let parsed):
                head = parsed
                stateBegan()
                headArrived(parsed)
            case .body(let range):
                let chunk = UnsafeRawBufferPointer(rebasing: bytes[(start + range.lowerBound)..<(start + range.upperBound)])
                if let streamedBody {
                    stateBegan()
                    streamedBody.append(chunk)
                    if streamedBody.isComplete { streamedBodyFailed() }  // past the route's limit
                } else {
                    guard bodyCount + chunk.count <= context.configuration.maxBodySize else {
                        refuse(.bodyTooLarge)
                        return bytes.count
                    }
                    bodyParts.append(Bytes(copying: chunk))
                    bodyCount += chunk.count
                }
            case .end:
                if let streamedBody {
                    self.streamedBody = nil
                    streamedBody.end(.success(parser.trailers))
                    _ = machine.requestComplete()  // the handler runs already
                } else {
                    _ = machine.requestComplete()
                    dispatch()
                }
                if machine.isIdle, offset < bytes.count {
                    machine.bytesArrived()
                    stateBegan()
                }
            }
        }
        return offset
    }

    /// The connection's state changed: its deadline counts from now. Within `receive`, which may pass
    /// through several states for one request (idle, head, body, idle again), the clock is read once, as
    /// it returns: a stamp no earlier than the change, so the deadline never falls due early, for one
    /// clock read per read callback.
    func stateBegan() {
        if isReceiving {
            stateChangedWhileReceiving = true
        } else {
            stateSince = context.now
        }
    }

    /// A request head: route it. A streaming route's handler starts now; any other waits for the body.
    private func headArrived(_ head: HTTPRequestHead) {
        let request = head.request
        let target = request.path ?? "/"
        // The query starts at the first "?": found on the UTF-8 bytes, not by comparing Characters.
        let path = target[..<(target.utf8.firstIndex(of: UInt8(ascii: "?")) ?? target.endIndex)]
        let (resolution, pattern) = context.router.lookup(request.method, path: request.method == .options && target == "*" ? "*" : path)
        if case .found(let handler, let parameters) = resolution {
            route = RouteMatch(handler: handler, parameters: parameters)
        } else {
            route = nil
            unrouted = resolution
        }
        let limit: Int?
        switch route?.handler {
        case .streaming(let routeLimit, _)?, .streamingCallback(let routeLimit, _)?: limit = routeLimit
        default: limit = context.configuration.maxBodySize
        }
        requestContext = makeRequestContext(request, path: path, route: pattern)
        if case .length(let length) = head.framing, let limit, length > limit {
            refuse(.bodyTooLarge)  // 413 before any body byte, and before `100 Continue`
            return
        }
        guard let route, route.handler.streamsBody else {
            if machine.headParsed(head) == .sendContinue { writeContinue() }
            return
        }
        let body = HTTPRequestBody(connection: self, limit: limit)
        streamedBody = body
        machine.streamingStarted(head)
        let serverRequest = HTTPServerRequest(head: request, version: head.version, body: [],
                                              parameters: route.parameters, loop: context.loop, context: requestContext!, server: context)
        let middleware = context.router.hasGroupChains ? context.router.middleware(for: request.method, path: path) : context.router.middleware
        if !middleware.isEmpty {
            streamingThroughMiddleware(serverRequest, body: body, handler: route.handler, middleware: middleware)
            return
        }
        switch route.handler {
        case .streaming(_, let run):
            let logger = context.logger
            context.startTask {
                let response: HTTPServerResponse?
                do {
                    response = try await run(serverRequest, body)
                } catch let error as HTTPBodyError {
                    response = Self.response(for: error)
                } catch {
                    response = .answering(error, path: path, logger: logger)
                }
                if let response { self.onLoop { $0.send(response) } }
            }
        case .streamingCallback(_, let run):
            run(serverRequest, body, HTTPResponder(connection: self))
        default:
            break
        }
    }

    /// The context of a request whose head has arrived: its id (the client's when valid), its start, its
    /// trace context and span (when tracing is on).
    private func makeRequestContext(_ request: HTTPRequest, path: Substring, route: String?) -> HTTPRequestContext {
        let id: String
        if let field = context.configuration.requestIDField, let given = request.headerFields[field],
           HTTPRequestIDGenerator.isValid(given) {
            id = given
        } else {
            id = context.requestIDs.next()
        }
        var serviceContext: ServiceContext?
        if let tracing = context.tracing {
            serviceContext = tracing.extract(from: request.headerFields)
            if tracing.startsSpans {
                let span = tracing.startSpan(method: request.method, path: path, route: route, scheme: context.scheme,
                                             context: serviceContext ?? .topLevel)
                self.span = span
                serviceContext = span.context
            }
        }
        return HTTPRequestContext(id: id, startTime: .now, route: route, serviceContext: serviceContext)
    }

    /// The current request's response has ended (or the connection closed first): end its span, tell
    /// the middleware it reached, and forget it.
    func requestEnded(isComplete: Bool) {
        guard let requestContext else { return }
        self.requestContext = nil
        let status = responseStatus
        responseStatus = nil
        if let span {
            self.span = nil
            if let status { HTTPTracing.record(status: status.code, on: span) }
            span.end()
        }
        let trail = takeMiddlewareTrail()
        let bodyBytes = responseBodyBytes
        responseBodyBytes = 0
        guard let trail else { return }
        let summary = HTTPResponseSummary(status: status, bodyBytes: bodyBytes, startTime: requestContext.startTime,
                                          endTime: .now, isComplete: isComplete)
        trail.chain.responseEnded(summary, for: trail.request, reached: trail.reached)
    }

    /// The answer to a request no route takes: 404, 405 or 204 with `Allow`, 501.
    static func response(for resolution: HTTPRouter.Resolution) -> HTTPServerResponse {
        switch resolution {
        case .methodNotAllowed(let allow):
            var response = HTTPServerResponse.text("Method Not Allowed", status: .methodNotAllowed)
            response.head.headerFields[.allow] = allow.map(\.rawValue).joined(separator: ", ")
            return response
        case .options(let allow):
            return HTTPServerResponse(status: .noContent, headerFields: [.allow: allow.map(\.rawValue).joined(separator: ", ")])
        case .notImplemented:
            return .text("Not Implemented", status: .notImplemented)
        case .notFound, .found:
            return .text("Not Found", status: .notFound)
        }
    }

    /// The response a handler's uncaught body error gets: 413 past a limit; none when the client has gone
    /// or a malformed body was answered already.
    static func response(for error: HTTPBodyError) -> HTTPServerResponse? {
        switch error {
        case .tooLarge: .text("Content Too Large", status: .contentTooLarge)
        case .connectionClosed, .malformed: nil
        }
    }

    /// The streamed body passed its route's limit: answer 413 unless a response has begun, then close.
    private func streamedBodyFailed() {
        streamedBody = nil
        if responseStarted {
            tcp.abort()
        } else {
            _ = machine.parseFailed(.bodyTooLarge)
            writeRefusal(.contentTooLarge)
        }
    }

    /// The handler started reading a streamed body: answer `Expect: 100-continue` now, unless a final
    /// head went out first (the body is then refused, and the connection closes after the response).
    func bodyReadingStarted() {
        guard !responseStarted, !isClosed, machine.bodyWanted() == .sendContinue else { return }
        writeContinue()
    }

    /// The handler took buffered body bytes: parse more of what the socket delivered.
    func bodyHasRoom() {
        guard !isReceiving, !isClosed else { return }
        stateBegan()
        tcp.consumeBufferedInput { bytes in receive(bytes) }
    }

    private func refuse(_ error: HTTPRequestError) {
        // A client's mistake, not the server's: at `debug` (its access line is at `info`), so that a client
        // cannot fill a production log with errors.
        if context.logger.logLevel <= .debug {
            context.logger.debug("refused request", metadata: ["status": "\(error.status.code)", "reason": "\(error)"])
        }
        if let streamedBody {  // a malformed body under a running handler
            self.streamedBody = nil
            streamedBody.end(.failure(.malformed(error)))
            if responseStarted {
                tcp.abort()
                return
            }
        }
        guard case .refuse(let status) = machine.parseFailed(error) else { return }
        writeRefusal(status, error: error)
    }

    /// Answers a request the server refuses itself (a parser error, a body over the limit, a slow head or
    /// body) and closes: as any response, with a body (``HTTPServer/Configuration/refusalResponse``, the
    /// reason phrase by default), the request id and an access line, and through the middleware's
    /// `responseEnded` when the head had arrived.
    func writeRefusal(_ status: HTTPResponse.Status, error: HTTPRequestError? = nil) {
        context.dateCache.refresh()
        var response = context.configuration.refusalResponse?(status, error) ?? .text(status.reasonPhrase, status: status)
        response.head.status = status
        let body: Bytes
        if case .bytes(let bytes) = response.body.storage { body = bytes } else { body = Bytes() }
        var echoedID: (name: HTTPField.Name, value: String)?
        if let field = context.configuration.requestIDField, response.head.headerFields[field] == nil {
            echoedID = (field, requestContext?.id ?? context.requestIDs.next())
        }
        let date = context.dateCache.fieldLine
        body.withUnsafeBytes { body in
            writeEncoded(estimate: Self.headEstimate + body.count) { encoder in
                encoder.appendHead(response.head, status: status, framing: .length(body.count), keepAlive: false, http10: false,
                                   date: date, extraField: echoedID)
                encoder.appendBody(body)
            }
        }
        if let head {
            logAccess(head, status: status.code)
        } else if context.logger.logLevel <= .info, context.configuration.logsAccess {
            context.logger.log(level: .info, Logger.Message(stringLiteral: "- - " + String(status.code)), source: "LoopKitHTTP")
        }
        responseStarted = true  // a handler still running answers no more
        if let requestContext {
            responseStatus = status
            responseBodyBytes = body.count
            if let head, extrasStorage?.middlewareTrail == nil, extrasStorage?.asyncTrail == nil {
                // Refused before the chain ran: its `responseEnded` hooks (an access log, metrics) see it.
                let request = HTTPServerRequest(head: head.request, version: head.version, body: [],
                                                parameters: route?.parameters ?? HTTPPathParameters(), loop: context.loop,
                                                context: requestContext, server: context)
                let summary = HTTPResponseSummary(status: status, bodyBytes: body.count, startTime: requestContext.startTime,
                                                  endTime: .now, isComplete: true)
                context.router.middleware.responseEnded(summary, for: request, reached: .max)
            }
            requestEnded(isComplete: true)
        }
        tcp.closeAfterDrainingInput()  // the client may still be sending: the refusal must not be lost to a reset
    }

    // MARK: Handlers

    /// Runs the handler of a request whose body was collected.
    ///
    /// The head stays where it is (`self.head`, read in place): a local copy of it would retain, and
    /// then release, each of its fields once more per request.
    private func dispatch() {
        guard head != nil else { return }
        let collected = bodyCount == 0 ? Bytes() : Bytes(joining: bodyParts)
        if bodyCount > 0 {
            bodyParts.removeAll(keepingCapacity: true)
            bodyCount = 0
        }
        let middleware = context.router.hasGroupChains && route != nil
            ? context.router.middleware(for: head!.request.method, path: head!.request.path ?? "/") : context.router.middleware
        guard middleware.isEmpty else {
            dispatchThroughMiddleware(body: collected, middleware: middleware)
            return
        }
        guard let route = route.take() else {
            send(Self.response(for: unrouted))
            return
        }
        if case .sync(let run) = route.handler {
            // The request is made as the handler's argument, so that it is destroyed after the call
            // rather than copied for the other cases.
            let response: HTTPServerResponse
            do {
                response = try run(HTTPServerRequest(head: head!.request, version: head!.version, body: collected,
                                                     parameters: route.parameters, loop: context.loop,
                                                     context: requestContext!, server: context))
            } catch {
                response = .answering(error, path: head.map { HTTPServerRequest.path(of: $0.request) } ?? "?",
                                      logger: context.logger)
            }
            send(response)
            return
        }
        guard let head else { return }
        let serverRequest = HTTPServerRequest(head: head.request, version: head.version, body: collected,
                                              parameters: route.parameters, loop: context.loop, context: requestContext!, server: context)
        switch route.handler {
        case .sync:
            break  // above
        case .async(let run):
            tcp.pauseReading()
            let logger = context.logger
            context.handlerTasksInFlight += 1
            context.startTask {
                let response: HTTPServerResponse
                do {
                    response = try await run(serverRequest)
                } catch {
                    response = .answering(error, path: serverRequest.path, logger: logger)
                }
                self.onLoop { connection in
                    connection.context.handlerTasksInFlight -= 1
                    connection.send(response)
                }
            }
        case .webSocket(let webSocketRoute):
            upgradeRequested(serverRequest, head: head, upgrader: WebSocketUpgrader(route: webSocketRoute))
        case .upgrade(let upgradeRoute):
            upgradeRoute.upgrader.requested(serverRequest, head: head, on: self, middleware: nil)
        case .streaming, .streamingCallback:
            break  // started at the head
        }
    }

    /// Runs `body` on the loop thread: inline when already there (the usual case), else queued.
    func onLoop(_ body: @escaping @Sendable (HTTPConnection) -> Void) {
        if context.loop.isCurrent {
            body(self)
        } else {
            do {
                try context.loop.invoke { body(self) }
            } catch {
                // The loop has shut down: its connections are gone with it.
            }
        }
    }

    /// Writes a response for the current request (once: a second response for it is dropped).
    func send(_ response: HTTPServerResponse) {
        guard !isClosed, let head, !responseStarted else { return }
        responseStarted = true
        if machine.isStreamingBody, case .bytes = response.body.storage {
            machine.closeAfterThisResponse()  // answered before the body ended: the connection closes
        }
        let keepAlive = machine.responseKeepsAlive
        let isHead = head.request.method == .head
        let sentStatus = response.head.status  // parsed from the head's field: read once
        let status = sentStatus.code
        let allowsBody = status >= 200 && status != 204 && status != 304
        context.dateCache.refresh()
        logAccess(head, status: status)
        responseStatus = sentStatus
        var echoedID: (name: HTTPField.Name, value: String)?
        if let field = context.configuration.requestIDField, let requestContext, response.head.headerFields[field] == nil {
            echoedID = (field, requestContext.id)
        }
        let date = context.dateCache.fieldLine
        let http10 = head.version.minor == 0
        switch response.body.storage {
        case .bytes(let bytes):
            let sendsBody = allowsBody && !isHead
            let framing: HTTPResponseEncoder.BodyFraming = allowsBody ? .length(bytes.count) : .none
            if sendsBody && bytes.count >= Self.bodyCopyThreshold {
                writeEncoded(estimate: Self.headEstimate, followedBy: bytes) { encoder in
                    encoder.appendHead(response.head, status: sentStatus, framing: framing,
                                       keepAlive: keepAlive, http10: http10, date: date, extraField: echoedID)
                }
            } else {
                bytes.withUnsafeBytes { body in
                    writeEncoded(estimate: Self.headEstimate + (sendsBody ? body.count : 0)) { encoder in
                        encoder.appendHead(response.head, status: sentStatus, framing: framing,
                                           keepAlive: keepAlive, http10: http10, date: date, extraField: echoedID)
                        if sendsBody { encoder.appendBody(body) }
                    }
                }
            }
            if sendsBody { responseBodyBytes = bytes.count }
            finishResponse()
        case .stream(let write, let watchesClient):
            guard allowsBody && !isHead else {
                writeEncoded(estimate: Self.headEstimate) { encoder in
                    encoder.appendHead(response.head, status: sentStatus, framing: allowsBody ? .chunked : .none, keepAlive: keepAlive,
                                       http10: false, date: date, extraField: echoedID)
                }
                finishResponse()
                return
            }
            // HTTP/1.0 has no chunked coding: stream raw and close at the end.
            let chunked = head.version.minor >= 1
            if !chunked { machine.closeAfterThisResponse() }
            // The stream may read the body it runs beside: a client waiting for `100 Continue` gets it
            // now, before this final head (RFC 9110 §10.1.1), unless the handler has asked for it already.
            let sendsContinue = machine.bodyWanted() == .sendContinue
            writeEncoded(estimate: Self.headEstimate) { encoder in
                if sendsContinue { encoder.appendContinue() }
                encoder.appendHead(response.head, status: sentStatus, framing: chunked ? .chunked : .none,
                                   keepAlive: keepAlive && chunked, http10: http10, date: date, extraField: echoedID)
            }
            // Reading pauses while the body streams (pipelined requests wait), unless a streamed request body
            // must go on or the stream watches for its client leaving (bytes then wait in the input buffer,
            // bounded by its high-water mark, and the client's end of file closes the connection).
            if !machine.isStreamingBody && !watchesClient { tcp.pauseReading() }
            let writer = HTTPBodyWriter(connection: self, chunked: chunked)
            streamsEvents = watchesClient
            responseTask = context.startTask {
                do {
                    try await write(writer)
                    self.onLoop { $0.finishStream(chunked: chunked) }
                } catch {
                    self.onLoop { connection in
                        if connection.eventStreamEndedByShutdown {  // the server stops: the stream ends cleanly
                            connection.finishStream(chunked: chunked)
                        } else if connection.isClosed {  // the client went away: the writer learnt it, nothing failed
                            connection.context.logger.debug("streamed body ended: client gone", metadata: ["error": "\(error)"])
                        } else {
                            connection.context.logger.error("streamed body failed", metadata: ["error": "\(error)"])
                        }
                        connection.tcp.abort()
                    }
                }
            }
        }
    }

    private func finishStream(chunked: Bool) {
        responseTask = nil
        streamsEvents = false
        guard !isClosed else { return }
        if chunked { writeEncoded(estimate: 5) { $0.appendLastChunk() } }
        finishResponse()
    }

    private func finishResponse() {
        head = nil
        responseStarted = false
        if requestContext != nil { requestEnded(isComplete: true) }
        switch machine.responseFinished() {
        case .resumeParsing:
            stateBegan()
            if !isReceiving {
                tcp.resumeReading()
                tcp.consumeBufferedInput { bytes in receive(bytes) }
            }
        case .closeAfterFlush:
            tcp.close()
        case .linger:
            // The body is not all here: RFC 9112 §9.3's close, without losing the response to a reset.
            if let streamedBody {
                self.streamedBody = nil
                streamedBody.end(.failure(.connectionClosed))
            }
            stateBegan()
            tcp.shutdownOutput()
            tcp.resumeReading()
            tcp.consumeBufferedInput { $0.count }
        default:
            break
        }
    }

    /// What a response head is first given room for: a status line, a few fields, `Date`,
    /// `Content-Length` and `Connection` (about 100 bytes for `/hello`). A head that needs more is
    /// serialised again into the exact size.
    static let headEstimate = 256

    /// The body size from which a response's ``Bytes`` body is queued by reference after its head instead
    /// of copied into the write batch with it. Measured with callgrind (issue 30; instructions per
    /// keep-alive request, by reference minus copied): +146 at 13 bytes, +271 at 256, +35 at 1 KiB, −66 at
    /// 2 KiB, −245 at 4 KiB, −69,300 at 64 KiB: below 2 KiB the copy costs less than the extra `iovec` and
    /// the storage's retain and release.
    static let bodyCopyThreshold = 2048

    /// Serialises with `encode` straight into this connection's output: inside the read callback, the
    /// loop's write batch (the responses to pipelined requests go out with one `writev` when it returns);
    /// outside it, the loop's copy buffer for one write, sent at once. `encode` is first given `estimate`
    /// bytes and, when they were too few, the size it turned out to need. Then `body`, if any, by reference
    /// (no copy) in the same write, and `trailer` after it (a chunk's CRLF): a body at or above
    /// ``bodyCopyThreshold`` goes from its own storage, as the write batch takes ``Bytes``. Nothing is
    /// written once the connection is closing or closed (the close handler tells this connection). Loop
    /// thread.
    func writeEncoded(estimate: Int, followedBy body: Bytes? = nil, then trailer: Bytes? = nil,
                      _ encode: (inout HTTPResponseEncoder) -> Void) {
        guard !isClosed else { return }
        var capacity = estimate
        while true {
            var needed = 0
            do {
                // Closure literals, not a local function: a local function that captures `needed` made
                // Swift box it on the heap, an allocation per response.
                if let body {
                    try tcp.write(reservingCapacity: capacity, { Self.encode(into: $0, encode, needing: &needed) },
                                  followedBy: body, then: trailer)
                } else {
                    try tcp.write(reservingCapacity: capacity) { Self.encode(into: $0, encode, needing: &needed) }
                }
            } catch {
                return  // closing or closed: the close handler tells this connection
            }
            guard needed > capacity else { return }
            capacity = needed
        }
    }

    /// Writes `bytes` by reference, as they are (a streamed body without chunked framing). Nothing is written
    /// once the connection is closing or closed, as ``writeEncoded(estimate:followedBy:then:_:)``. Loop thread.
    func writeBody(_ bytes: Bytes) {
        guard !isClosed else { return }
        do {
            try tcp.write(bytes)
        } catch {
            return  // closing or closed: the close handler tells this connection
        }
    }

    /// Runs `encode` into `buffer`; returns the bytes written, or 0 with `needed` set to the size it takes
    /// when `buffer` is too small.
    @inline(__always)
    private static func encode(into buffer: UnsafeMutableRawBufferPointer, _ encode: (inout HTTPResponseEncoder) -> Void,
                               needing needed: inout Int) -> Int {
        var encoder = HTTPResponseEncoder(into: buffer)
        encode(&encoder)
        guard encoder.fits else {
            needed = encoder.count
            return 0
        }
        return encoder.count
    }

    /// Writes an interim `100 Continue` (with the read callback's batch when inside it). Loop thread.
    func writeContinue() {
        writeEncoded(estimate: HTTPResponseEncoder.continueLine.utf8CodeUnitCount) { $0.appendContinue() }
    }

    /// One access line, `METHOD TARGET STATUS`, at `info`: built by appending (no interpolation of the
    /// HTTP types' descriptions) and with its source given (swift-log would otherwise work it out of
    /// `#fileID` on every call).
    func logAccess(_ head: HTTPRequestHead, status: Int) {
        guard context.logger.logLevel <= .info, context.configuration.logsAccess else { return }
        var line = head.request.method.rawValue
        line += " "
        line += head.request.path ?? ""
        line += " "
        line += String(status)
        context.logger.log(level: .info, Logger.Message(stringLiteral: line), source: "LoopKitHTTP")
    }

    // MARK: Shutdown

    /// The loop's registry drains (graceful shutdown): close now when idle, else after the current response.
    func connectionShouldDrain(_ connection: Connection) {
        shutdown()
    }

    /// Graceful shutdown: close now when idle, else after the current response. An event stream has no end
    /// to wait for: its task is cancelled, and its body terminated when the writer returns or throws (a
    /// client's `EventSource` reconnects elsewhere).
    func shutdown() {
        guard !isClosed else { return }
        if machine.shutdownRequested() == .closeNow {
            tcp.close()
        } else if streamsEvents, let responseTask, !eventStreamEndedByShutdown {
            eventStreamEndedByShutdown = true
            responseTask.cancel()
        }
    }
}
