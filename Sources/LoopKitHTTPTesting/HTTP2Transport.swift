import HTTPTypes

/// An ``HTTPTestClient``'s requests carried over HTTP/2 (h2c with prior knowledge) on another transport's
/// connection: in memory on the stepped loop, or live on a socket. The client goes on writing and reading
/// HTTP/1.1 as it does in the other modes; this transport reads each request it writes back
/// (``HTTP1RequestReader``), submits it as a stream of nghttp2's client session (``HTTP2ClientSession``),
/// and hands the client each stream's response written as HTTP/1.1, in the order the requests were sent:
/// its `:status` as a status line, its fields, its DATA as the body (chunked when the response gives no
/// `content-length`, its trailers then in the last chunk), so every reader of the client (responses,
/// server-sent events, streamed bodies) works unchanged. Deterministic in memory: nothing happens between
/// the client's calls, as with the in-memory transport it wraps.
///
/// What HTTP/1 has and HTTP/2 has not: a request with `Upgrade` is refused
/// (``HTTPTestClientError/notTranslatable(_:)``: the server does not offer WebSocket over HTTP/2, RFC 8441);
/// `Connection: close` on a request ends the connection once its response is read, as the server ends an
/// HTTP/1.1 connection; a stream the server resets before its response ends reads as the connection
/// closing. Connection-specific fields (`Connection`, `Keep-Alive`, `Transfer-Encoding`, `Upgrade`, `TE`
/// other than `trailers`) are not sent, as RFC 9113 §8.2.2 requires; `Host` becomes `:authority`.
///
/// Used on the client's thread only, like the transport it wraps.
final class HTTP2Transport: HTTPTestTransport {
    /// The transport the HTTP/2 bytes go over.
    let inner: any HTTPTestTransport
    private var session: HTTP2ClientSession!
    private var reader = HTTP1RequestReader()
    /// The streams open, by id.
    private var streams: [Int32: Stream] = [:]
    /// The streams whose response the client has not had whole, in the order their requests were sent.
    private var order: [Stream] = []
    /// The request whose body the client is still writing.
    private var uploading: Stream?
    /// Responses written as HTTP/1.1, for the client.
    private var output: [UInt8] = []
    /// The connection has ended as the client is to see it (a `Connection: close` answered, a stream reset,
    /// a GOAWAY whose streams are all answered).
    private var closed = false
    /// nghttp2's reason when the server's bytes broke HTTP/2.
    private var protocolFailure: String?
    /// The last stream a GOAWAY said the server would answer.
    private var goAwayLastStream: Int32?
    /// Bytes handed to the inner transport so far (``runUntilIdle()`` runs until none are added).
    private var sentCount = 0

    /// One request and its response.
    private final class Stream {
        var id: Int32 = 0
        let isHead: Bool
        let closesConnection: Bool
        /// Request body bytes not yet taken by nghttp2, and whether the body has ended.
        var upload: [UInt8] = []
        var uploadEnded = false
        /// The header block being read.
        var block: [(name: String, value: String)] = []
        /// The response's body is written in chunks (no `content-length`), and its last chunk is out.
        var isChunked = false
        var lastChunkWritten = false
        /// The response written as HTTP/1.1 and not yet handed over (a later stream waits for the ones
        /// before it), and whether it is whole.
        var output: [UInt8] = []
        var isAnswered = false

        init(isHead: Bool, closesConnection: Bool) {
            self.isHead = isHead
            self.closesConnection = closesConnection
        }
    }

    /// Speaks HTTP/2 over `inner`: sends the connection preface and the client's SETTINGS at once.
    init(over inner: any HTTPTestTransport) throws {
        self.inner = inner
        session = HTTP2ClientSession(transport: self, streamWindow: 1 << 20, connectionWindow: 1 << 24)
        try flush()
    }

    // MARK: Requests

    func send(_ bytes: [UInt8]) throws {
        let events = try reader.feed(bytes)
        for (index, event) in events.enumerated() {
            switch event {
            case .head(let method, let target, let fields):
                let hasBody = index + 1 >= events.count || events[index + 1] != .end
                try submit(method: method, target: target, fields: fields, hasBody: hasBody)
            case .body(let bytes):
                guard let stream = uploading else { continue }
                stream.upload += bytes
                session.resumeBody(stream.id)
            case .end:
                guard let stream = uploading else { continue }
                stream.uploadEnded = true
                session.resumeBody(stream.id)
                uploading = nil
            }
        }
        try flush()
    }

    private func submit(method: String, target: String, fields: [HTTP1RequestReader.Field], hasBody: Bool) throws {
        var authority = "test"
        var regular: [(name: String, value: String)] = []
        var closesConnection = false
        for field in fields {
            let name = field.name.lowercased()
            switch name {
            case "host": authority = field.value
            case "upgrade":
                throw HTTPTestClientError.notTranslatable(
                    "an Upgrade request (\(field.value)): the server does not offer WebSocket over HTTP/2 (RFC 8441); use an HTTP/1.1 mode")
            case "connection":
                closesConnection = field.value.lowercased().split(separator: ",").contains { $0.filter { $0 != " " && $0 != "\t" } == "close" }
            case "keep-alive", "proxy-connection", "transfer-encoding": break
            case "te" where field.value.lowercased() != "trailers": break
            default: regular.append((name, field.value))
            }
        }
        let head = [(":method", method), (":scheme", "http"), (":authority", authority), (":path", target)]
        let stream = Stream(isHead: method == "HEAD", closesConnection: closesConnection)
        guard let id = session.submitRequest(head.map { (name: $0.0, value: $0.1) } + regular, hasBody: hasBody) else {
            throw HTTPTestClientError.closedEarly(received: "HTTP/2: no new stream can be opened on this connection")
        }
        stream.id = id
        streams[id] = stream
        order.append(stream)
        if hasBody { uploading = stream }
    }

    /// nghttp2 asks for the next bytes of `stream`'s request body: nil while the client has written none
    /// (the stream's DATA waits for ``HTTP2ClientSession/resumeBody(_:)``).
    func readBody(stream id: Int32, into buffer: UnsafeMutableRawBufferPointer, endOfBody: inout Bool) -> Int? {
        guard let stream = streams[id] else {
            endOfBody = true
            return 0
        }
        if stream.upload.isEmpty {
            guard stream.uploadEnded else { return nil }
            endOfBody = true
            return 0
        }
        let count = min(buffer.count, stream.upload.count)
        stream.upload.withUnsafeBytes { buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: $0[..<count])) }
        stream.upload.removeFirst(count)
        endOfBody = stream.upload.isEmpty && stream.uploadEnded
        return count
    }

    // MARK: Responses (nghttp2's callbacks, inside `receive`)

    func headerBlockBegan(stream: Int32) {
        streams[stream]?.block = []
    }

    func headerArrived(stream: Int32, name: String, value: String) {
        streams[stream]?.block.append((name, value))
    }

    func headerBlockEnded(stream id: Int32, endsStream: Bool) {
        guard let stream = streams[id] else { return }
        let block = stream.block
        stream.block = []
        let regular = block.filter { !$0.name.hasPrefix(":") }
        if let status = block.first(where: { $0.name == ":status" }).flatMap({ Int($0.value) }) {
            var fields = regular
            if status >= 200 {
                let hasNoBody = stream.isHead || status == 204 || status == 304
                if !hasNoBody && !regular.contains(where: { $0.name == "content-length" }) {
                    if endsStream {
                        fields.append(("content-length", "0"))
                    } else {
                        stream.isChunked = true
                        fields.append(("transfer-encoding", "chunked"))
                    }
                }
                if stream.closesConnection { fields.append(("connection", "close")) }
            }
            var head = "HTTP/1.1 \(status) \(HTTPResponse.Status(code: status).reasonPhrase)\r\n"
            for field in fields { head += "\(field.name): \(field.value)\r\n" }
            stream.output += Array((head + "\r\n").utf8)
        } else if stream.isChunked {  // trailers: in the last chunk
            var last = "0\r\n"
            for field in regular { last += "\(field.name): \(field.value)\r\n" }
            stream.output += Array((last + "\r\n").utf8)
            stream.lastChunkWritten = true
        }
        if endsStream { answered(stream) } else { deliver() }
    }

    func bodyArrived(stream id: Int32, _ bytes: [UInt8]) {
        guard let stream = streams[id], !bytes.isEmpty else { return }
        if stream.isChunked {
            stream.output += Array((String(bytes.count, radix: 16) + "\r\n").utf8) + bytes + [13, 10]
        } else {
            stream.output += bytes
        }
        deliver()
    }

    func bodyEnded(stream id: Int32) {
        guard let stream = streams[id] else { return }
        answered(stream)
    }

    func streamClosed(_ id: Int32, errorCode: UInt32) {
        guard let stream = streams.removeValue(forKey: id) else { return }
        if !stream.isAnswered {  // reset before its response ended: the client sees the connection end
            closed = true
        }
        if uploading === stream {  // the server is done with the request: what the client writes next is a new one
            uploading = nil
            reader.abandonBody()
        }
    }

    func goAwayArrived(lastStream: Int32) {
        goAwayLastStream = lastStream
        deliver()
    }

    private func answered(_ stream: Stream) {
        if stream.isChunked && !stream.lastChunkWritten {
            stream.output += Array("0\r\n\r\n".utf8)
            stream.lastChunkWritten = true
        }
        stream.isAnswered = true
        deliver()
    }

    /// Hands the client what the streams have written, in request order: a stream's response once those
    /// before it are whole.
    private func deliver() {
        while let first = order.first {
            if let last = goAwayLastStream, first.id > last {  // never to be answered
                closed = true
                return
            }
            output += first.output
            first.output = []
            guard first.isAnswered else { return }
            order.removeFirst()
            if first.closesConnection {
                closed = true
                return
            }
        }
        if goAwayLastStream != nil { closed = true }
    }

    // MARK: Bytes

    /// Feeds nghttp2 what the server sent and sends what it answers (acknowledgements, window updates).
    private func pump() {
        let bytes = inner.takeReceived()
        guard !bytes.isEmpty, protocolFailure == nil else { return }
        if let reason = session.receive(bytes) { protocolFailure = reason }
        do {
            try flush()
        } catch {
            // The connection has closed: the inner transport says so to the client's next read.
        }
    }

    private func flush() throws {
        let bytes = session.takeOutput()
        guard !bytes.isEmpty else { return }
        sentCount += bytes.count
        try inner.send(bytes)
    }

    func takeReceived() -> [UInt8] {
        pump()
        defer { output.removeAll(keepingCapacity: true) }
        return output
    }

    var isClosedByServer: Bool {
        if closed { return true }
        guard inner.isClosedByServer else { return false }
        pump()  // what came before the end, for the client's next read
        return true
    }

    func waitForProgress() throws -> Bool {
        if let protocolFailure { throw HTTPTestClientError.malformed("HTTP/2 from the server: \(protocolFailure)") }
        if !output.isEmpty || closed { return true }
        return try inner.waitForProgress()
    }

    func runUntilIdle() throws {
        // Each round may have the client answer (a SETTINGS ack, a window update): run until it does not.
        for _ in 0..<64 {
            try inner.runUntilIdle()
            let before = sentCount
            pump()
            if sentCount == before { return }
        }
    }

    func advance(by duration: Duration) throws {
        try inner.advance(by: duration)
    }

    func closeClient() throws {
        session.terminate()
        do {
            try flush()
        } catch {
            // Already closed by the server: nothing to say goodbye to.
        }
        try inner.closeClient()
    }

    func shutDown() {
        inner.shutDown()
    }
}
