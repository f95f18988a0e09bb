import HTTPTypes
import LoopKit
import LoopKitNet

/// One HTTP/2 request stream: the ``HTTPStream`` the dispatcher answers on, as it answers an HTTP/1
/// connection, so every route, middleware, streamed body and event stream works over HTTP/2 unchanged.
/// It gathers the request head from the HEADERS nghttp2 decoded (pseudo-headers into swift-http-types'
/// `HTTPRequest`), collects or streams the body (its window opened as the handler takes it), and holds the
/// response body until nghttp2 sends it as DATA.
///
/// Loop-confined: every call on the connection's loop thread; `@unchecked Sendable` only so the
/// dispatcher's tasks (on the same loop's executor) can hold it.
final class HTTP2Stream: HTTPStream, HTTPRequestBodySource, @unchecked Sendable {  // loop-confined: its tasks run on its loop
    let id: Int32
    /// The connection, while it lives (a task may outlive it).
    private weak var connection: HTTP2Connection?
    let context: HTTPLoopContext
    // Loop-confined state, like the HTTP/1 connection's: `@exclusivity(unchecked)` spares each access a
    // runtime exclusivity check.
    @exclusivity(unchecked) var exchange: HTTPExchange?
    @exclusivity(unchecked) var spareExchange: HTTPExchange?
    @exclusivity(unchecked) var responseBodyBytes = 0
    @exclusivity(unchecked) private(set) var isClosed = false
    /// Since when (the loop's clock) the stream has waited for the client's next body byte; nil when no
    /// body is awaited. The loop's sweep answers 408 past ``HTTPServer/Configuration/bodyTimeout``, as on
    /// HTTP/1 (``checkBodyDeadline(now:)``).
    @exclusivity(unchecked) private var bodyAwaitedSince: UInt64?

    // The request, as it arrives.
    @exclusivity(unchecked) private var method: String?
    @exclusivity(unchecked) private var scheme: String?
    @exclusivity(unchecked) private var authority: String?
    @exclusivity(unchecked) private var path: String?
    @exclusivity(unchecked) private var fields = HTTPFields()
    @exclusivity(unchecked) private var trailers: HTTPFields?
    @exclusivity(unchecked) private var headEnded = false
    /// The most body bytes the route takes (nil: no limit), from the dispatcher's plan.
    @exclusivity(unchecked) private var bodyLimit: Int?
    @exclusivity(unchecked) private var bodyParts: [Bytes] = []
    @exclusivity(unchecked) private var bodyCount = 0
    /// The body of a streaming route's request, while it arrives.
    @exclusivity(unchecked) private var streamedBody: HTTPRequestBody?
    /// Body bytes buffered in ``streamedBody`` and not yet handed back to the peer's window.
    @exclusivity(unchecked) private var unconsumed = 0
    /// The request was refused (413): what it still sends is dropped.
    @exclusivity(unchecked) private var refused = false
    /// The head's size as HTTP/1 would count it (`name: value` and CRLF per field) and its field count,
    /// held to the server's ``HTTPParserLimits`` as on HTTP/1 (nghttp2 holds the encoded list only to
    /// ``HTTP2Settings/maxHeaderListSize``).
    @exclusivity(unchecked) private var headSize = 0
    @exclusivity(unchecked) private var fieldCount = 0

    // The response body, as nghttp2 takes it.
    @exclusivity(unchecked) private var outbound: [Bytes] = []
    @exclusivity(unchecked) private var outboundHead = 0
    @exclusivity(unchecked) private var outboundOffset = 0
    @exclusivity(unchecked) private var outboundCount = 0
    /// Every byte of the body has been handed over: nghttp2 sends END_STREAM with the last.
    @exclusivity(unchecked) private var outboundEnded = false
    /// nghttp2 found nothing to send and waits for ``resumeBody`` (the body streams slower than the peer reads).
    @exclusivity(unchecked) private var isDeferred = false
    /// The last DATA went to nghttp2: the exchange ends once it is sent.
    @exclusivity(unchecked) private var responseComplete = false
    /// A streamed body's writer waiting for room.
    @exclusivity(unchecked) private var roomWaiters: [UnsafeContinuation<Void, any Error>] = []

    init(id: Int32, connection: HTTP2Connection) {
        self.id = id
        self.connection = connection
        context = connection.context
    }

    // MARK: The request

    /// A field of the head (or of the trailers, after the body). False: reset the stream (a field
    /// swift-http-types refuses).
    func headerArrived(name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>) -> Bool {
        let value = String(decoding: value, as: UTF8.self)
        if name.first == UInt8(ascii: ":") {
            guard !headEnded else { return false }  // nghttp2 refuses pseudo-headers in trailers too
            switch String(decoding: name, as: UTF8.self) {
            case ":method": method = value
            case ":scheme": scheme = value
            case ":authority": authority = value
            case ":path": path = value
            default: return false  // `:protocol` (extended CONNECT) is not offered
            }
            return true
        }
        guard let fieldName = HTTPField.Name(String(decoding: name, as: UTF8.self)) else { return false }
        if !headEnded {
            fieldCount += 1
            headSize += name.count + value.utf8.count + 4
        }
        if headEnded {
            trailers = trailers ?? HTTPFields()
            trailers!.append(HTTPField(name: fieldName, value: value))
        } else {
            fields.append(HTTPField(name: fieldName, value: value))
        }
        return true
    }

    /// The request head is complete: the dispatcher routes it.
    func headEnded(endsStream: Bool) {
        headEnded = true
        guard let method = method.flatMap({ HTTPRequest.Method($0) }) else {
            connection?.reset(id, code: NGHTTP2Session.protocolError)
            return
        }
        let request = HTTPRequest(method: method, scheme: scheme, authority: authority, path: path, headerFields: fields)
        let length = fields[.contentLength].flatMap { Int($0) }
        let framing: HTTPBodyFraming = endsStream ? .none : length.map { .length($0) } ?? .chunked
        let expectsContinue = fields[.expect]?.lowercased() == "100-continue"
        let head = HTTPRequestHead(request: request, version: .http2, keepAlive: true, expectsContinue: expectsContinue,
                                   framing: framing)
        let plan = HTTPDispatcher.headArrived(head, on: self)
        bodyLimit = plan.limit
        if let error = headLimitBroken(method: method, path: path) {
            refuse(error.status, error: error)  // 431, and the stream reset: the connection goes on
            return
        }
        if !endsStream { bodyAwaitedSince = context.now }
        if let length, let limit = plan.limit, length > limit {
            refuse(.contentTooLarge)  // 413 before any body byte, and before `100 Continue`
            return
        }
        if plan.streams {
            let body = HTTPRequestBody(connection: self, loop: context.loop, limit: plan.limit)
            streamedBody = body
            HTTPDispatcher.bodyStreaming(body, on: self)
            if endsStream { bodyEnded() }
            return
        }
        if endsStream {
            HTTPDispatcher.bodyCollected(Bytes(), on: self)
        } else if expectsContinue {
            connection?.submitContinue(id)
        }
    }

    /// DATA arrived.
    func bodyArrived(_ bytes: UnsafeRawBufferPointer) {
        guard !refused, !bytes.isEmpty else {
            connection?.consume(id, bytes: bytes.count)
            return
        }
        bodyAwaitedSince = context.now
        if let streamedBody {
            streamedBody.append(bytes)
            if streamedBody.isComplete {  // past the route's limit
                self.streamedBody = nil
                refuse(.contentTooLarge)
                return
            }
            if streamedBody.hasRoom {
                connection?.consume(id, bytes: bytes.count)
            } else {
                unconsumed += bytes.count  // the handler is behind: the window stays shut until it reads
            }
            return
        }
        guard bodyCount + bytes.count <= bodyLimit ?? .max else {
            refuse(.contentTooLarge)
            return
        }
        bodyParts.append(Bytes(copying: bytes))
        bodyCount += bytes.count
        connection?.consume(id, bytes: bytes.count)
    }

    /// The trailers ended the body.
    func trailersEnded() {
        bodyEnded()
    }

    /// END_STREAM: the body is complete.
    func bodyEnded() {
        bodyAwaitedSince = nil
        guard !refused else { return }
        if let streamedBody {
            self.streamedBody = nil
            streamedBody.end(.success(trailers))
            return
        }
        guard exchange != nil, !HTTPDispatcher.hasResponded(on: self) else { return }
        let collected = bodyCount == 0 ? Bytes() : Bytes(joining: bodyParts)
        bodyParts = []
        bodyCount = 0
        HTTPDispatcher.bodyCollected(collected, on: self)
    }

    /// The handler started reading a streamed body: `100 Continue` now, unless a final head went first.
    func bodyReadingStarted() {
        guard exchange?.head.expectsContinue == true, !HTTPDispatcher.hasResponded(on: self), !isClosed else { return }
        connection?.submitContinue(id)
        connection?.streamWrote()
    }

    /// The handler took buffered body bytes: the window opens by what was held back.
    func bodyHasRoom() {
        guard unconsumed > 0 else { return }
        connection?.consume(id, bytes: unconsumed)
        unconsumed = 0
        connection?.streamWrote()
    }

    /// Refuses the request (a body over its limit): the response, then the stream is reset with
    /// `NO_ERROR` once it has gone out (RFC 9113 §8.1: the client stops sending).
    /// The limit of ``HTTPParserLimits`` the head breaks, counted as HTTP/1 counts it (the request line
    /// as `METHOD path HTTP/1.1`), nil when it keeps them.
    private func headLimitBroken(method: HTTPRequest.Method, path: String?) -> HTTPRequestError? {
        let limits = context.configuration.limits
        let requestLine = method.rawValue.utf8.count + (path?.utf8.count ?? 1) + 11
        if requestLine > limits.maxRequestLineLength { return .requestLineTooLong }
        if fieldCount > limits.maxFieldCount { return .tooManyFields }
        if requestLine + headSize + 2 > limits.maxHeadSize { return .headTooLarge }
        return nil
    }

    private func refuse(_ status: HTTPResponse.Status, error: HTTPRequestError? = nil) {
        refused = true
        bodyAwaitedSince = nil
        if let streamedBody {
            self.streamedBody = nil
            streamedBody.end(.failure(.tooLarge(limit: bodyLimit ?? 0)))
        }
        if HTTPDispatcher.hasResponded(on: self) {
            connection?.reset(id, code: NGHTTP2Session.cancel)
            return
        }
        var response = HTTPDispatcher.refusal(status, error: error ?? (status == .contentTooLarge ? .bodyTooLarge : nil),
                                              configuration: context.configuration)
        response.status = status
        HTTPDispatcher.send(response, on: self)
    }

    /// The loop's sweep: a body the client has sent nothing of for ``HTTPServer/Configuration/bodyTimeout``
    /// is answered as on HTTP/1: a collected body with `408 Request Timeout` (then the stream is reset
    /// with `NO_ERROR`); a body streamed to its handler (only while the handler has room for more: a
    /// handler that does not read is its own business) ends with ``HTTPBodyError/connectionClosed`` and
    /// the stream is reset with `CANCEL`, as HTTP/1 closes the connection without a 408 once the request
    /// was handed over. Without it a client could hold a stream, and its handler, open forever by never
    /// finishing its upload. Loop thread.
    func checkBodyDeadline(now: UInt64) {
        guard let since = bodyAwaitedSince, !refused, !isClosed, streamedBody?.hasRoom ?? true,
              now >= since.addingSaturated(context.bodyTimeout) else { return }
        bodyAwaitedSince = nil
        context.logger.notice("request timed out", metadata: ["status": "408", "protocol": "h2"])
        if let streamedBody {
            self.streamedBody = nil
            refused = true
            streamedBody.end(.failure(.connectionClosed))
            connection?.reset(id, code: NGHTTP2Session.cancel)
            return
        }
        refuse(.requestTimeout)
    }

    // MARK: The stream's end

    /// The stream closed (both sides done, a reset, or the connection went).
    func closed() {
        guard !isClosed else { return }
        isClosed = true
        if responseComplete {
            responseWentOut()
        } else {
            HTTPDispatcher.streamClosed(on: self)
        }
        if let streamedBody {
            self.streamedBody = nil
            streamedBody.end(.failure(.connectionClosed))
        }
        let waiters = roomWaiters
        roomWaiters = []
        for waiter in waiters { waiter.resume(throwing: HTTPServerError.connectionClosed) }
    }

    /// The response's last DATA has been sent: the exchange ends complete.
    func responseWentOut() {
        guard exchange != nil else { return }
        HTTPDispatcher.exchangeEnded(on: self, isComplete: true)
        if refused { connection?.reset(id, code: NGHTTP2Session.noError) }
    }

    // MARK: The response

    func writeResponse(status: HTTPResponse.Status, fields: HTTPFields, encoded: HTTPEncodedFields?, body: Bytes, isHead: Bool,
                       version: HTTPVersion, echoedID: HTTPEchoedRequestID?) {
        let code = status.code
        let allowsBody = code >= 200 && code != 204 && code != 304
        let sendsBody = allowsBody && !isHead && !body.isEmpty
        if sendsBody {
            outbound = [body]
            outboundCount = body.count
            outboundEnded = true
            responseBodyBytes = body.count
        }
        guard connection?.submitResponse(id, status: code, fields: fields, extra: echoedID.flatMap { fields[$0.name] == nil ? $0 : nil },
                                         contentLength: allowsBody ? body.count : nil, hasBody: sendsBody) == true else { return }
        if !sendsBody { responseComplete = true }
        connection?.streamWrote()
        if !sendsBody { responseWentOut() }
    }

    func writeStreamedResponseHead(status: HTTPResponse.Status, fields: HTTPFields, isHead: Bool, version: HTTPVersion,
                                   echoedID: HTTPEchoedRequestID?, watchesClient: Bool) -> HTTPBodyWriter? {
        let code = status.code
        let allowsBody = code >= 200 && code != 204 && code != 304
        let sendsBody = allowsBody && !isHead
        guard connection?.submitResponse(id, status: code, fields: fields, extra: echoedID.flatMap { fields[$0.name] == nil ? $0 : nil }, contentLength: nil,
                                         hasBody: sendsBody) == true else { return nil }
        guard sendsBody else {
            responseComplete = true
            connection?.streamWrote()
            responseWentOut()
            return nil
        }
        connection?.streamWrote()
        return HTTPBodyWriter(stream: self)
    }

    func finishStreamedBody(_ writer: HTTPBodyWriter) {
        guard !isClosed else { return }
        outboundEnded = true
        resumeIfDeferred()
    }

    /// A streamed body's chunk, queued for DATA.
    func appendBody(_ bytes: Bytes) {
        guard !isClosed, !bytes.isEmpty else { return }
        outbound.append(bytes)
        outboundCount += bytes.count
        responseBodyBytes += bytes.count
        resumeIfDeferred()
    }

    /// Whether a streamed body's writer may go on without waiting: the body queued here and the
    /// connection's unsent output are both below the write high-water mark.
    var hasRoom: Bool {
        guard !isClosed, let connection else { return false }
        let highWater = context.configuration.writeHighWaterMark
        return outboundCount < highWater && connection.tcp.bufferedOutputCount < highWater
    }

    /// Suspends a streamed body's writer until ``hasRoom``; throws once the stream has closed.
    func waitForRoom() async throws {
        guard !hasRoom else { return }
        guard !isClosed else { throw HTTPServerError.connectionClosed }
        try await withUnsafeThrowingContinuation { (continuation: UnsafeContinuation<Void, any Error>) in
            roomWaiters.append(continuation)
        }
    }

    /// nghttp2 took body bytes, or the connection's output drained: a waiting writer goes on.
    func roomMayHaveOpened() {
        guard !roomWaiters.isEmpty, hasRoom else { return }
        let waiters = roomWaiters
        roomWaiters = []
        for waiter in waiters { waiter.resume() }
    }

    private func resumeIfDeferred() {
        guard isDeferred else { return }
        isDeferred = false
        connection?.resumeBody(id)
        connection?.streamWrote()
    }

    /// Copies queued body bytes into nghttp2's DATA payload; nil when none are queued yet (deferred).
    func readBody(into buffer: UnsafeMutableRawBufferPointer, endOfBody: inout Bool) -> Int? {
        var copied = 0
        while copied < buffer.count, outboundHead < outbound.count {
            let chunk = outbound[outboundHead]
            let take = min(chunk.count - outboundOffset, buffer.count - copied)
            chunk.withUnsafeBytes { source in
                UnsafeMutableRawBufferPointer(rebasing: buffer[copied..<(copied + take)])
                    .copyMemory(from: UnsafeRawBufferPointer(rebasing: source[outboundOffset..<(outboundOffset + take)]))
            }
            copied += take
            outboundOffset += take
            outboundCount -= take
            if outboundOffset == chunk.count {
                outbound[outboundHead] = Bytes()
                outboundHead += 1
                outboundOffset = 0
            }
        }
        if outboundHead == outbound.count {
            outbound.removeAll(keepingCapacity: true)
            outboundHead = 0
            if outboundEnded {
                endOfBody = true
                responseComplete = true
            } else if copied == 0 {
                isDeferred = true
                return nil
            }
        }
        roomMayHaveOpened()
        return copied
    }

    // MARK: For the dispatcher

    func onLoop(_ body: @escaping @Sendable (HTTP2Stream) -> Void) {
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

    /// Other streams go on while a handler runs: nothing to pause.
    func pauseReading() {}

    /// Resets the stream (a streamed body failed).
    func abort() {
        connection?.reset(id, code: NGHTTP2Session.internalError)
        connection?.streamWrote()
    }

    func responder(slot: HTTPResponseSlot?) -> HTTPResponder {
        HTTPResponder(connection: self, slot: slot)
    }

    /// No protocol switch over HTTP/2 (the `Upgrade` field is HTTP/1's; RFC 8441's extended CONNECT is
    /// not offered): the upgrader's check refuses such a request before this is reached.
    func writeSwitchingProtocols(_ bytes: [UInt8]) -> Bool { false }

    func handOver<Upgrader: HTTPUpgrader>(to upgrader: Upgrader, acceptance: Upgrader.Acceptance, request: HTTPServerRequest) {}
}
