import HTTPTypes
import LoopKit
import LoopKitNet

// The HTTP/1 encoder side of the codec: a response the dispatcher hands over is serialised into the
// connection's output (inside the read callback, the loop's write batch), framed by length, chunked or
// raw until the close, and then the connection keeps alive, closes, or lingers.

extension HTTPConnection {
    /// What a response head is first given room for: a status line, a few fields, `Date`,
    /// `Content-Length` and `Connection` (about 100 bytes for `/hello`). A head that needs more is
    /// serialised again into the exact size.
    static let headEstimate = 256

    /// The room first given to a head of `fields`: ``headEstimate`` and 48 bytes a field, so that a head
    /// of many fields (a file's eight: `ETag`, `Last-Modified`, `Content-Type`…) is serialised once, not
    /// twice (a 1 KiB file's request spent 3k instructions on the second pass).
    static func headEstimate(for fields: HTTPFields) -> Int { headEstimate + 48 * fields.count }

    /// The body size from which a response's ``Bytes`` body is queued by reference after its head instead
    /// of copied into the write batch with it. Measured with callgrind (issue 30; instructions per
    /// keep-alive request, by reference minus copied): +146 at 13 bytes, +271 at 256, +35 at 1 KiB, −66 at
    /// 2 KiB, −245 at 4 KiB, −69,300 at 64 KiB: below 2 KiB the copy costs less than the extra `iovec` and
    /// the storage's retain and release.
    static let bodyCopyThreshold = 2048

    /// Writes a response with a body of bytes (none for `HEAD`, 1xx, 204 and 304), then ends it. Loop thread.
    func writeResponse(status: HTTPResponse.Status, fields: HTTPFields, encoded: HTTPEncodedFields?, body bytes: Bytes, isHead: Bool,
                       version: HTTPVersion, echoedID: HTTPEchoedRequestID?) {
        if machine.isStreamingBody {
            machine.closeAfterThisResponse()  // answered before the body ended: the connection closes
        }
        let keepAlive = machine.responseKeepsAlive
        let code = status.code
        let allowsBody = code >= 200 && code != 204 && code != 304
        context.dateCache.refresh()
        let date = context.dateCache.fieldLine
        let http10 = version.minor == 0
        let sendsBody = allowsBody && !isHead
        let framing: HTTPResponseEncoder.BodyFraming = allowsBody ? .length(bytes.count) : .none
        // The fields' lines made before (a kept file's) are copied, sized exactly: one pass.
        let estimate = encoded.map { Self.headEstimate + $0.lines.count } ?? Self.headEstimate(for: fields)
        if sendsBody && bytes.count >= Self.bodyCopyThreshold {
            writeEncoded(estimate: estimate, followedBy: bytes) { encoder in
                encoder.appendHead(status: status, fields: fields, encoded: encoded, framing: framing,
                                   keepAlive: keepAlive, http10: http10, date: date, requestID: echoedID)
            }
        } else {
            bytes.withUnsafeBytes { body in
                writeEncoded(estimate: estimate + (sendsBody ? body.count : 0)) { encoder in
                    encoder.appendHead(status: status, fields: fields, encoded: encoded, framing: framing,
                                       keepAlive: keepAlive, http10: http10, date: date, requestID: echoedID)
                    if sendsBody { encoder.appendBody(body) }
                }
            }
        }
        if sendsBody { responseBodyBytes = bytes.count }
        finishResponse()
    }

    /// Writes the head of a response whose body streams, and returns the writer its body is written
    /// through (chunked, or raw until the close for HTTP/1.0); nil when the response has no body (`HEAD`,
    /// 1xx, 204, 304), which then has ended. Loop thread.
    func writeStreamedResponseHead(status: HTTPResponse.Status, fields: HTTPFields, isHead: Bool, version: HTTPVersion,
                                   echoedID: HTTPEchoedRequestID?, watchesClient: Bool) -> HTTPBodyWriter? {
        let keepAlive = machine.responseKeepsAlive
        let code = status.code
        let allowsBody = code >= 200 && code != 204 && code != 304
        context.dateCache.refresh()
        let date = context.dateCache.fieldLine
        // A length the handler declares (a file's) frames the body by length rather than chunked; the
        // writer must write exactly that much, or the connection is closed at the end (see
        // ``finishStreamedBody(_:)``).
        let declaredLength = allowsBody ? fields[.contentLength].flatMap { Int($0) }.flatMap { $0 >= 0 ? $0 : nil } : nil
        guard allowsBody && !isHead else {
            let framing: HTTPResponseEncoder.BodyFraming = allowsBody ? declaredLength.map { .length($0) } ?? .chunked : .none
            writeEncoded(estimate: Self.headEstimate(for: fields)) { encoder in
                encoder.appendHead(status: status, fields: fields, framing: framing, keepAlive: keepAlive,
                                   http10: false, date: date, requestID: echoedID)
            }
            finishResponse()
            return nil
        }
        // HTTP/1.0 has no chunked coding: stream raw and close at the end (unless the length is declared).
        let chunked = version.minor >= 1 && declaredLength == nil
        if version.minor == 0 && declaredLength == nil { machine.closeAfterThisResponse() }
        // The stream may read the body it runs beside: a client waiting for `100 Continue` gets it
        // now, before this final head (RFC 9110 §10.1.1), unless the handler has asked for it already.
        let sendsContinue = machine.bodyWanted() == .sendContinue
        let http10 = version.minor == 0
        writeEncoded(estimate: Self.headEstimate(for: fields)) { encoder in
            if sendsContinue { encoder.appendContinue() }
            encoder.appendHead(status: status, fields: fields, framing: declaredLength.map { .length($0) } ?? (chunked ? .chunked : .none),
                               keepAlive: keepAlive && (chunked || declaredLength != nil), http10: http10, date: date,
                               requestID: echoedID)
        }
        // Reading pauses while the body streams (pipelined requests wait), unless a streamed request body
        // must go on or the stream watches for its client leaving (bytes then wait in the input buffer,
        // bounded by its high-water mark, and the client's end of file closes the connection).
        if !machine.isStreamingBody && !watchesClient { tcp.pauseReading() }
        return HTTPBodyWriter(connection: self, chunked: chunked, declaredLength: declaredLength)
    }

    /// The streamed body's writer returned: the last chunk, and the response ends. Loop thread.
    func finishStreamedBody(_ writer: HTTPBodyWriter) {
        guard !isClosed else { return }
        if let declared = writer.declaredLength, responseBodyBytes != declared {
            // The body is not the length its head declared: the client can tell only by the close.
            context.logger.error("streamed body of the wrong length", metadata: ["declared": "\(declared)", "written": "\(responseBodyBytes)"])
            abort()
            return
        }
        if writer.chunked { writeEncoded(estimate: 5) { $0.appendLastChunk() } }
        finishResponse()
    }

    /// The response has gone out whole: the exchange ends, then the connection reads the next request,
    /// closes after the flush, or lingers (RFC 9112 §9.3).
    private func finishResponse() {
        HTTPDispatcher.exchangeEnded(on: self, isComplete: true)
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
}
