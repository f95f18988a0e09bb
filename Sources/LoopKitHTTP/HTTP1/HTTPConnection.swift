import HTTPTypes
import Logging
import LoopKit
import LoopKitNet

/// One HTTP/1.1 connection, the HTTP/1 codec: parses straight out of the TCP connection's inbound bytes
/// (lent in place by its read callback), hands each request's head and body to the dispatcher
/// (``HTTPDispatcher``), and encodes what it answers into the write batch, so each batch of responses goes
/// out with one write. It refuses what it cannot parse, keeps the connection alive between requests and
/// keeps its deadlines; it knows nothing of handler kinds or middleware.
///
/// Loop-confined: created, used and released on its loop's thread. It is `@unchecked Sendable` only so
/// the tasks of async handlers and streamed bodies (which run on the same loop's executor) can hold it;
/// every entry point checks it runs on the loop (in debug builds).
final class HTTPConnection: ConnectionHandler, HTTPStream, HTTPRequestBodySource, @unchecked Sendable {  // loop-confined: its tasks run on its loop
    let context: HTTPLoopContext
    let tcp: Connection
    @exclusivity(unchecked) var machine = HTTPConnectionStateMachine()
    @exclusivity(unchecked) var parser: HTTPRequestParser
    // The state below is loop-confined, like the connection: `@exclusivity(unchecked)` spares each access
    // a runtime exclusivity check (a `swift_beginAccess` per access on the hot path).
    /// The exchange of the request being read or answered: the dispatcher's, which alone reads and changes
    /// it (nil between requests).
    @exclusivity(unchecked) var exchange: HTTPExchange?
    /// The dispatcher's box of rarely needed per-request state, kept between requests (``HTTPExchange/Extras``).
    @exclusivity(unchecked) var spareExchange: HTTPExchange?
    /// The body of the request being read, as the reads copied it out of the read buffer (joined into
    /// one ``Bytes`` for the handler: no second copy when it came in one read).
    @exclusivity(unchecked) var bodyParts: [Bytes] = []
    /// The bytes in ``bodyParts``.
    @exclusivity(unchecked) var bodyCount = 0
    /// When the current state began, on the loop's clock: what its deadline (head, body, idle) counts
    /// from. Stamped by ``stateBegan()``.
    var stateSince: UInt64 = 0
    /// The body of a streaming route's request, while it arrives.
    @exclusivity(unchecked) var streamedBody: HTTPRequestBody?
    /// The current response's body bytes handed to the connection so far.
    @exclusivity(unchecked) var responseBodyBytes = 0
    /// Set when the TCP connection has closed.
    var isClosed = false

    /// True while `receive` runs (what it writes goes out with the read callback's batch, and parsing
    /// goes on there).
    var isReceiving = false
    /// The state changed while `receive` ran: it is stamped once, as `receive` returns.
    private var stateChangedWhileReceiving = false
    /// No byte has been read yet on a plain connection of a server that speaks HTTP/2: the first bytes
    /// may be HTTP/2's preface (h2c with prior knowledge), which hands the connection to the HTTP/2 codec.
    private var mayBeHTTP2Preface: Bool

    init(context: HTTPLoopContext, tcp: Connection) {
        self.context = context
        self.tcp = tcp
        var limits = context.configuration.limits
        limits.maxBodySize = .max  // bodies are limited here, per route (a streaming route has its own limit)
        parser = HTTPRequestParser(limits: limits)
        stateSince = context.now
        mayBeHTTP2Preface = context.configuration.http2 != nil && context.configuration.tls == nil
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
        machine.transportClosed()
        HTTPDispatcher.streamClosed(on: self)
        if let streamedBody {
            self.streamedBody = nil
            streamedBody.end(.failure(.connectionClosed))
        }
    }

    // MARK: Parsing

    /// Parses and answers as many requests as the bytes hold; returns how many bytes were consumed.
    func receive(_ bytes: UnsafeRawBufferPointer) -> Int {
        if machine.isLingering { return bytes.count }  // after an early answer: read and drop
        if mayBeHTTP2Preface {
            switch Self.http2Preface(in: bytes) {
            case .incomplete: return 0  // "PRI * HTTP/2.0…" so far: wait for the rest of it
            case .found:
                mayBeHTTP2Preface = false
                HTTP2Connection(context: context, tcp: tcp).start(replacing: true)  // lent these bytes next
                return 0
            case .absent:
                mayBeHTTP2Preface = false
                if context.logger.logLevel <= .debug { context.logProtocol("http/1.1", of: tcp) }
            }
        }
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
            // The last request's head, for this one to be parsed into, once its last reference has gone
            // (here, in a new read callback, rather than when its response ended: the callback that parsed
            // it held it until it returned).
            if parser.spareHead == nil { parser.spareHead = spareExchange?.takeHeadIfUnreferenced() }
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
                    bodyComplete()
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

    /// A request head: the dispatcher routes it. A streaming route's handler starts now; any other waits
    /// for the body.
    private func headArrived(_ head: HTTPRequestHead) {
        let plan = HTTPDispatcher.headArrived(head, on: self)
        if case .length(let length) = head.framing, let limit = plan.limit, length > limit {
            refuse(.bodyTooLarge)  // 413 before any body byte, and before `100 Continue`
            return
        }
        guard plan.streams else {
            if machine.headParsed(head) == .sendContinue { writeContinue() }
            return
        }
        let body = HTTPRequestBody(connection: self, loop: context.loop, limit: plan.limit)
        streamedBody = body
        machine.streamingStarted(head)
        HTTPDispatcher.bodyStreaming(body, on: self)
    }

    /// The body of a request whose route collects it has all arrived: the dispatcher runs its handler.
    private func bodyComplete() {
        let collected = bodyCount == 0 ? Bytes() : Bytes(joining: bodyParts)
        if bodyCount > 0 {
            bodyParts.removeAll(keepingCapacity: true)
            bodyCount = 0
        }
        HTTPDispatcher.bodyCollected(collected, on: self)
    }

    /// The handler started reading a streamed body: answer `Expect: 100-continue` now, unless a final
    /// head went out first (the body is then refused, and the connection closes after the response).
    func bodyReadingStarted() {
        guard !HTTPDispatcher.hasResponded(on: self), !isClosed, machine.bodyWanted() == .sendContinue else { return }
        writeContinue()
    }

    /// The handler took buffered body bytes: parse more of what the socket delivered.
    func bodyHasRoom() {
        guard !isReceiving, !isClosed else { return }
        stateBegan()
        tcp.consumeBufferedInput { bytes in receive(bytes) }
    }

    // MARK: For the dispatcher

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

    /// A handler runs in a task: the connection is not read meanwhile (pipelined requests wait).
    func pauseReading() {
        tcp.pauseReading()
    }

    /// Ends the connection at once (a streamed body failed).
    func abort() {
        tcp.abort()
    }

    /// A callback-form route's responder on this connection.
    func responder(slot: HTTPResponseSlot?) -> HTTPResponder {
        HTTPResponder(connection: self, slot: slot)
    }

    // MARK: Shutdown

    /// The loop's registry drains (graceful shutdown): close now when idle, else after the current response.
    func connectionShouldDrain(_ connection: Connection) {
        shutdown()
    }

    /// Graceful shutdown: close now when idle, else after the current response (an event stream is ended
    /// by the dispatcher, ``HTTPDispatcher/shutdownRequested(on:)``).
    func shutdown() {
        guard !isClosed else { return }
        if machine.shutdownRequested() == .closeNow {
            tcp.close()
        } else {
            HTTPDispatcher.shutdownRequested(on: self)
        }
    }

    // MARK: h2c

    /// The client connection preface of HTTP/2 (RFC 9113 §3.4), which no HTTP/1 request begins with.
    private static let http2Preface: [UInt8] = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)

    private enum PrefaceMatch { case found, incomplete, absent }

    /// Whether `bytes`, a connection's first, are (or so far could be) HTTP/2's preface.
    private static func http2Preface(in bytes: UnsafeRawBufferPointer) -> PrefaceMatch {
        let count = min(bytes.count, http2Preface.count)
        for index in 0..<count where bytes[index] != http2Preface[index] { return .absent }
        return count == http2Preface.count ? .found : .incomplete
    }
}
