import HTTPTypes
import Logging
import LoopKit
import LoopKitNet

/// One HTTP/1.1 connection: parses straight out of the TCP connection's inbound bytes (lent in place by
/// its read callback), runs handlers on the loop, and writes each batch of responses with one write.
///
/// Loop-confined: created, used and released on its loop's thread. It is `@unchecked Sendable` only so
/// the tasks of async handlers and streamed bodies (which run on the same loop's executor) can hold it;
/// every entry point checks it runs on the loop (in debug builds).
final class HTTPConnection: @unchecked Sendable {
    let context: HTTPLoopContext
    let tcp: TCPConnection
    var machine = HTTPConnectionStateMachine()
    var parser: HTTPRequestParser
    var encoder = HTTPResponseEncoder()
    /// The head of the request being read or answered.
    var head: HTTPRequestHead?
    /// The body of the request being read.
    var body: [UInt8] = []
    /// The sweep tick at which the current state began (timeouts).
    var stateSince: UInt64 = 0
    /// Set when the TCP connection has closed.
    var isClosed = false
    /// True while `receive` runs (a sync handler's response is flushed at its end).
    private var isReceiving = false

    init(context: HTTPLoopContext, tcp: TCPConnection) {
        self.context = context
        self.tcp = tcp
        parser = HTTPRequestParser(limits: context.configuration.limits)
        stateSince = context.tick
    }

    /// Takes the TCP connection's events. The TCP connection holds its handlers, and so this connection,
    /// until it closes (it drops them then): the HTTP connection lives exactly as long as the socket.
    func start() {
        tcp.onRead { [self] bytes in
            guard machine.canParse else { return 0 }
            return receive(bytes)
        }
        tcp.onClose { [self] _ in closed() }
    }

    /// The TCP connection has ended (either side, or an error); its streamed-body writers are resumed by it.
    private func closed() {
        guard !isClosed else { return }
        isClosed = true
        machine.transportClosed()
        context.remove(self)
    }

    // MARK: Parsing

    /// Parses and answers as many requests as the bytes hold; returns how many bytes were consumed.
    private func receive(_ bytes: UnsafeRawBufferPointer) -> Int {
        isReceiving = true
        defer {
            isReceiving = false
            flush()
        }
        var offset = 0
        if machine.isIdle && !bytes.isEmpty {
            machine.bytesArrived()
            stateSince = context.tick
        }
        while machine.canParse {
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
                stateSince = context.tick
                if machine.headParsed(parsed) == .sendContinue { encoder.appendContinue() }
            case .body(let range):
                body.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[(start + range.lowerBound)..<(start + range.upperBound)]))
            case .end:
                _ = machine.requestComplete()
                dispatch()
                if machine.isIdle, offset < bytes.count {
                    machine.bytesArrived()
                    stateSince = context.tick
                }
            }
        }
        return offset
    }

    private func refuse(_ error: HTTPRequestError) {
        if context.logger.logLevel <= .error {
            context.logger.error("refused request", metadata: ["status": "\(error.status.code)", "reason": "\(error)"])
        }
        guard case .refuse(let status) = machine.parseFailed(error) else { return }
        writeRefusal(status)
    }

    private func writeRefusal(_ status: HTTPResponse.Status) {
        context.dateCache.refresh()
        encoder.appendHead(HTTPResponse(status: status), framing: .length(0), keepAlive: false, http10: false,
                           date: context.dateCache.fieldLine)
        flush()
        tcp.close()
    }

    // MARK: Handlers

    private func dispatch() {
        guard let head else { return }
        let request = head.request
        let pathEnd = request.path.map { $0.firstIndex(of: "?") ?? $0.endIndex }
        let path = request.path.map { $0[..<pathEnd!] } ?? "/"
        let collected = body
        body = []
        guard let (handler, parameters) = context.router.match(request.method, path: path) else {
            send(.text("Not Found", status: .notFound))
            return
        }
        let serverRequest = HTTPServerRequest(head: request, version: head.version, body: collected,
                                              parameters: parameters, loop: context.loop)
        switch handler {
        case .sync(let run):
            let response: HTTPServerResponse
            do {
                response = try run(serverRequest)
            } catch {
                context.logger.error("handler failed", metadata: ["path": "\(path)", "error": "\(error)"])
                response = .text("Internal Server Error", status: .internalServerError)
            }
            send(response)
        case .async(let run):
            tcp.pauseReading()
            let logger = context.logger
            Task(executorPreference: context.loop) {
                let response: HTTPServerResponse
                do {
                    response = try await run(serverRequest)
                } catch {
                    logger.error("handler failed", metadata: ["path": "\(path)", "error": "\(error)"])
                    response = .text("Internal Server Error", status: .internalServerError)
                }
                self.onLoop { $0.send(response) }
            }
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

    /// Writes a response for the current request.
    func send(_ response: HTTPServerResponse) {
        guard !isClosed, let head else { return }
        let keepAlive = machine.responseKeepsAlive
        let isHead = head.request.method == .head
        let status = response.head.status.code
        let allowsBody = status >= 200 && status != 204 && status != 304
        context.dateCache.refresh()
        logAccess(head, status: status)
        switch response.body.storage {
        case .bytes(let bytes):
            encoder.appendHead(response.head, framing: allowsBody ? .length(bytes.count) : .none, keepAlive: keepAlive,
                               http10: head.version.minor == 0, date: context.dateCache.fieldLine)
            if allowsBody && !isHead {
                bytes.withUnsafeBytes { encoder.appendBody($0) }
            }
            finishResponse()
        case .stream(let write):
            guard allowsBody && !isHead else {
                encoder.appendHead(response.head, framing: allowsBody ? .chunked : .none, keepAlive: keepAlive,
                                   http10: false, date: context.dateCache.fieldLine)
                finishResponse()
                return
            }
            // HTTP/1.0 has no chunked coding: stream raw and close at the end.
            let chunked = head.version.minor >= 1
            if !chunked { machine.closeAfterThisResponse() }
            encoder.appendHead(response.head, framing: chunked ? .chunked : .none, keepAlive: keepAlive && chunked,
                               http10: head.version.minor == 0, date: context.dateCache.fieldLine)
            flush()
            tcp.pauseReading()
            let writer = HTTPBodyWriter(connection: self, chunked: chunked)
            Task(executorPreference: context.loop) {
                do {
                    try await write(writer)
                    self.onLoop { $0.finishStream(chunked: chunked) }
                } catch {
                    self.onLoop { connection in
                        connection.context.logger.error("streamed body failed", metadata: ["error": "\(error)"])
                        connection.tcp.abort()
                    }
                }
            }
        }
    }

    private func finishStream(chunked: Bool) {
        guard !isClosed else { return }
        if chunked { encoder.appendLastChunk() }
        finishResponse()
    }

    private func finishResponse() {
        head = nil
        switch machine.responseFinished() {
        case .resumeParsing:
            stateSince = context.tick
            if !isReceiving {
                flush()
                tcp.resumeReading()
                tcp.consumeBufferedInput { bytes in receive(bytes) }
            }
        case .closeAfterFlush:
            flush()
            tcp.close()
        default:
            break
        }
    }

    /// Writes what the encoder holds, with one write (inside the read callback, into the loop's write
    /// batch: the batch of responses to pipelined requests goes out with one `writev`).
    func flush() {
        guard !encoder.buffer.isEmpty else { return }
        if !isClosed {
            let written = encoder.buffer.withUnsafeBytes { bytes in
                Result { () throws(NetError) in try tcp.write(copying: bytes) }
            }
            if case .failure = written {
                // Closing or closed: the close handler tells this connection.
            }
        }
        encoder.written()
    }

    private func logAccess(_ head: HTTPRequestHead, status: Int) {
        guard context.logger.logLevel <= .info else { return }
        context.logger.info("\(head.request.method) \(head.request.path ?? "") \(status)")
    }

    // MARK: Timeouts and shutdown

    /// Called by the loop's sweep timer: closes the connection when its state has lasted too long.
    func checkTimeout(now tick: UInt64) {
        guard !isClosed else { return }
        let limit: UInt64
        switch machine.state {
        case .idle: limit = context.idleTimeoutTicks
        case .readingHead: limit = context.headTimeoutTicks
        case .readingBody: limit = context.bodyTimeoutTicks
        default: return
        }
        guard tick &- stateSince >= limit else { return }
        switch machine.timedOut() {
        case .closeNow:
            tcp.close()
        case .refuse(let status):
            context.logger.notice("request timed out", metadata: ["status": "\(status.code)"])
            writeRefusal(status)
        default:
            break
        }
    }

    /// Graceful shutdown: close now when idle, else after the current response.
    func shutdown() {
        guard !isClosed else { return }
        if machine.shutdownRequested() == .closeNow { tcp.close() }
    }
}
