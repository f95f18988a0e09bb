import HTTPTypes
import Logging
import LoopKit
import LoopKitNet

/// One HTTP/2 connection, the HTTP/2 codec (RFC 9113) on nghttp2 (``NGHTTP2Session``): it feeds the
/// connection's bytes to the session, keeps one ``HTTP2Stream`` per request stream (each an ``HTTPStream``
/// the dispatcher answers on, as it answers an HTTP/1 connection), and writes what the session serialises
/// into the connection's output, so the frames of one read callback go out with one write. Flow control
/// is backpressure: a stream's window opens as its handler takes the body, response DATA goes out as the
/// peer's windows and the connection's high-water mark allow.
///
/// Made for a TLS connection whose ALPN chose `h2`, or a plain one that began with the HTTP/2 preface
/// (h2c with prior knowledge; `Upgrade: h2c` is not offered: RFC 9113 §3.1 removed it).
///
/// Loop-confined: created, used and released on its loop's thread; `@unchecked Sendable` only so its
/// streams' tasks (on the same loop's executor) can reach it.
final class HTTP2Connection: ConnectionHandler, @unchecked Sendable {  // loop-confined: its tasks run on its loop
    let context: HTTPLoopContext
    let tcp: Connection
    // Loop-confined state: `@exclusivity(unchecked)` spares each access a runtime exclusivity check.
    /// The nghttp2 session; made in `init`, after which it calls back into this connection.
    @exclusivity(unchecked) private var session: NGHTTP2Session!
    /// The streams open now, by id.
    @exclusivity(unchecked) private var streams: [Int32: HTTP2Stream] = [:]
    /// Streams whose response went out whole during the last send: their exchanges end after it.
    @exclusivity(unchecked) private var finished: [HTTP2Stream] = []
    @exclusivity(unchecked) private(set) var isClosed = false
    /// Inside `receive`: what the callbacks submit is sent once, as it returns.
    @exclusivity(unchecked) private var isReceiving = false
    /// A send is under way (a stream's write from a response task reached `flush` from inside it).
    @exclusivity(unchecked) private var isSending = false
    /// Reading stopped because the output is above its high-water mark (the peer does not read).
    @exclusivity(unchecked) private var readingPaused = false
    /// Graceful shutdown sent its GOAWAY: the connection closes once the streams in flight are done.
    @exclusivity(unchecked) private var isDraining = false
    /// When the connection last had no open stream begin, or last read bytes, on the loop's clock: what
    /// its idle deadline counts from.
    @exclusivity(unchecked) private var lastActivity: UInt64 = 0

    init(context: HTTPLoopContext, tcp: Connection) {
        self.context = context
        self.tcp = tcp
        session = NGHTTP2Session(connection: self, settings: context.configuration.http2 ?? HTTP2Settings())
        lastActivity = context.now
    }

    /// Becomes the connection's handler (taking over from the HTTP/1 codec that saw the preface, with the
    /// bytes it has read), and sends the server's SETTINGS.
    func start(replacing: Bool) {
        if context.logger.logLevel <= .debug { context.logProtocol(replacing ? "h2c" : "h2", of: tcp) }
        if replacing { tcp.replaceHandler(self) } else { tcp.setHandler(self) }
        flush()
    }

    // MARK: The connection's events

    func connection(_ connection: Connection, received bytes: UnsafeRawBufferPointer) -> Int {
        guard !isClosed else { return bytes.count }
        lastActivity = context.now
        isReceiving = true
        let failure = session.receive(bytes)
        isReceiving = false
        if let failure, context.logger.logLevel <= .debug {
            context.logger.debug("HTTP/2 connection failed", metadata: ["reason": "\(failure)"])
        }
        flush()
        if failure != nil { tcp.closeAfterDrainingInput() }
        return bytes.count
    }

    func connection(_ connection: Connection, closedWith reason: CloseReason) {
        guard !isClosed else { return }
        isClosed = true
        let open = streams.values
        streams = [:]
        for stream in open { stream.closed() }
    }

    func connectionBecameWritable(_ connection: Connection) {
        if readingPaused {
            readingPaused = false
            tcp.resumeReading()
        }
        flush()
        for stream in streams.values { stream.roomMayHaveOpened() }
    }

    func connectionInputEnded(_ connection: Connection) {
        tcp.close()
    }

    /// Graceful shutdown: a GOAWAY with the last stream taken; streams in flight finish (an event stream
    /// is ended by the dispatcher), then the connection closes.
    func connectionShouldDrain(_ connection: Connection) {
        guard !isClosed, !isDraining else { return }
        isDraining = true
        session.goAway()
        for stream in streams.values { HTTPDispatcher.shutdownRequested(on: stream) }
        flush()
        if streams.isEmpty { tcp.close() }
    }

    // MARK: Deadlines

    /// The loop's sweep (``HTTPLoopContext``): a connection whose client stopped taking its output, or
    /// whose close cannot drain, is cut (``OutputDeadlines``, as on HTTP/1); one with no stream open for the
    /// server's ``HTTPServer/Configuration/idleTimeout`` (and no byte read meanwhile) is sent GOAWAY and
    /// closed; a stream whose request body stalls past ``HTTPServer/Configuration/bodyTimeout`` is answered
    /// 408 or reset (``HTTP2Stream/checkBodyDeadline(now:)``). A stream whose handler is slow is the
    /// handler's business, as on HTTP/1.
    func checkDeadlines(_ connection: Connection, now: EventLoopClock.Instant) {
        guard !isClosed else { return }
        let now = now.nanoseconds
        if OutputDeadlines.cutIfStuck(tcp, now: now, context: context) { return }
        if !streams.isEmpty {
            for stream in Array(streams.values) { stream.checkBodyDeadline(now: now) }
            flush()
            return
        }
        guard now >= lastActivity.addingSaturated(context.idleTimeout) else { return }
        session.goAway()
        isDraining = true
        flush()
        tcp.close()
    }

    // MARK: Output

    /// Writes what the session has to send (from a read callback's end, a handler's response, a body
    /// chunk), as far as the output's high-water mark, then ends the exchanges whose responses went out
    /// whole; closes the connection when the session is done. Loop thread.
    func flush() {
        guard !isClosed, !isReceiving, !isSending else { return }
        isSending = true
        let highWater = context.configuration.writeHighWaterMark
        let tcp = tcp
        let sent = session.send { frames in
            do {
                try tcp.write(copying: frames)
            } catch {
                return false  // closing or closed: the close handler ends the streams
            }
            return tcp.bufferedOutputCount < highWater
        }
        isSending = false
        if !sent {
            tcp.abort()
            return
        }
        if tcp.bufferedOutputCount >= highWater, !readingPaused {
            readingPaused = true  // the peer reads nothing: read nothing more (its PINGs would pile up acks)
            tcp.pauseReading()
        }
        let done = finished
        finished = []
        for stream in done { stream.responseWentOut() }
        if session.isDone || (isDraining && streams.isEmpty && !session.wantsWrite) { tcp.close() }
    }

    /// A stream submitted something: sent now, or when the read callback under way returns.
    func streamWrote() {
        flush()
    }

    // MARK: For the streams

    func consume(_ stream: Int32, bytes: Int) {
        guard !isClosed else { return }
        session.consume(stream, bytes: bytes)
    }

    /// Submits a response head with a `date` (the loop's cached one) and, when given, a `content-length`.
    func submitResponse(_ stream: Int32, status: Int, fields: HTTPFields, extra: HTTPEchoedRequestID?,
                        contentLength: Int?, hasBody: Bool) -> Bool {
        guard !isClosed else { return false }
        context.dateCache.refresh()
        let line = context.dateCache.fieldLine  // "Date: …\r\n"
        let date = line.count > 8 ? line[6..<(line.count - 2)] : nil
        return session.submitResponse(stream, status: status, fields: fields, extra: extra, contentLength: contentLength,
                                      date: date, hasBody: hasBody)
    }

    func submitContinue(_ stream: Int32) {
        guard !isClosed else { return }
        session.submitInformational(stream, status: 100)
    }

    func resumeBody(_ stream: Int32) {
        guard !isClosed else { return }
        session.resumeBody(stream)
    }

    func reset(_ stream: Int32, code: UInt32) {
        guard !isClosed else { return }
        session.reset(stream, code: code)
    }

    // MARK: From the session (inside `receive` or `flush`)

    func headersBegan(stream id: Int32) -> Int32 {
        guard streams[id] == nil else { return 0 }
        streams[id] = HTTP2Stream(id: id, connection: self)
        return 0
    }

    func headerArrived(stream id: Int32, name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>) -> Int32 {
        guard let stream = streams[id] else { return 0 }
        return stream.headerArrived(name: name, value: value) ? 0 : NGHTTP2Session.resetStream
    }

    func headersEnded(stream id: Int32, endsStream: Bool, isTrailers: Bool) -> Int32 {
        guard let stream = streams[id] else { return 0 }
        if isTrailers {
            stream.trailersEnded()
        } else {
            stream.headEnded(endsStream: endsStream)
        }
        return 0
    }

    func bodyArrived(stream id: Int32, _ bytes: UnsafeRawBufferPointer) -> Int32 {
        guard let stream = streams[id] else {
            session.consume(id, bytes: bytes.count)  // a stream reset meanwhile: its bytes still count against the connection
            return 0
        }
        stream.bodyArrived(bytes)
        return 0
    }

    func bodyEnded(stream id: Int32) -> Int32 {
        streams[id]?.bodyEnded()
        return 0
    }

    func streamClosed(_ id: Int32, errorCode: UInt32) {
        guard let stream = streams.removeValue(forKey: id) else { return }
        if streams.isEmpty { lastActivity = context.now }
        stream.closed()
    }

    /// nghttp2 asks a stream's response body for DATA (nil: none yet, deferred until it resumes).
    func readBody(stream id: Int32, into buffer: UnsafeMutableRawBufferPointer, endOfBody: inout Bool) -> Int? {
        guard let stream = streams[id] else {
            endOfBody = true
            return 0
        }
        let count = stream.readBody(into: buffer, endOfBody: &endOfBody)
        if endOfBody { finished.append(stream) }
        return count
    }
}
