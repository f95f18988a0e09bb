import CNGHTTP2
import HTTPTypes

// The one file of LoopKitHTTP that calls nghttp2 (Debian's libnghttp2-dev). No HTTP/2 is written here:
// nghttp2 parses and serialises the frames, runs HPACK, flow control and the streams' state machines, and
// checks the messaging rules of RFC 9113 §8 (pseudo-headers, connection-specific fields, `te`, content
// length); this file turns its callbacks into calls on the connection (``HTTP2Connection``) and its
// submissions into Swift functions. nghttp2 does no I/O: the connection feeds it the bytes it reads
// (``receive(_:)``) and writes what it serialises (``send(_:)``).

/// One server-side nghttp2 session: a connection's HTTP/2 state. Loop-confined, like its connection;
/// every call on the loop's thread.
final class NGHTTP2Session {
    /// The nghttp2 session (`nghttp2_session *`).
    private let raw: OpaquePointer

    /// A session for `connection` (its callbacks' target, not retained: the connection owns the session),
    /// with `settings` sent as the server's first frame. Automatic window updates are off: the connection
    /// consumes bytes as its handlers take them (``consume(_:bytes:)``), so flow control is backpressure.
    init(connection: HTTP2Connection, settings: HTTP2Settings) {
        var callbacks: OpaquePointer?
        nghttp2_session_callbacks_new(&callbacks)
        defer { nghttp2_session_callbacks_del(callbacks) }
        nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks) { _, frame, user in
            guard let frame, let user else { return 0 }
            return NGHTTP2Session.connection(user).headersBegan(stream: frame.pointee.hd.stream_id)
        }
        nghttp2_session_callbacks_set_on_header_callback(callbacks) { _, frame, name, nameLength, value, valueLength, _, user in
            guard let frame, let user else { return 0 }
            return NGHTTP2Session.connection(user).headerArrived(
                stream: frame.pointee.hd.stream_id,
                name: UnsafeBufferPointer(start: name, count: nameLength), value: UnsafeBufferPointer(start: value, count: valueLength))
        }
        nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks) { _, frame, user in
            guard let frame, let user else { return 0 }
            let header = frame.pointee.hd
            let endsStream = header.flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0
            switch UInt32(header.type) {
            case NGHTTP2_HEADERS.rawValue:
                let isTrailers = frame.pointee.headers.cat == NGHTTP2_HCAT_HEADERS
                return NGHTTP2Session.connection(user).headersEnded(stream: header.stream_id, endsStream: endsStream, isTrailers: isTrailers)
            case NGHTTP2_DATA.rawValue:
                return endsStream ? NGHTTP2Session.connection(user).bodyEnded(stream: header.stream_id) : 0
            default:
                return 0
            }
        }
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks) { _, _, stream, data, length, user in
            guard let user else { return 0 }
            return NGHTTP2Session.connection(user).bodyArrived(stream: stream, UnsafeRawBufferPointer(start: data, count: length))
        }
        nghttp2_session_callbacks_set_on_stream_close_callback(callbacks) { _, stream, errorCode, user in
            guard let user else { return 0 }
            NGHTTP2Session.connection(user).streamClosed(stream, errorCode: errorCode)
            return 0
        }
        var options: OpaquePointer?
        nghttp2_option_new(&options)
        defer { nghttp2_option_del(options) }
        nghttp2_option_set_no_auto_window_update(options, 1)
        nghttp2_option_set_max_settings(options, 32)  // a SETTINGS frame with more entries is a flood
        nghttp2_option_set_max_outbound_ack(options, 1000)  // PING and SETTINGS acks the peer does not read
        nghttp2_option_set_stream_reset_rate_limit(options, UInt64(settings.resetBurst), UInt64(settings.resetsPerSecond))
        nghttp2_option_set_max_continuations(options, 8)  // a CONTINUATION flood
        var session: OpaquePointer?
        let user = Unmanaged.passUnretained(connection).toOpaque()
        let result = nghttp2_session_server_new2(&session, callbacks, user, options)
        precondition(result == 0 && session != nil, "nghttp2_session_server_new2: out of memory")
        raw = session!
        var entries = [
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS.rawValue),
                                   value: UInt32(settings.maxConcurrentStreams)),
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE.rawValue),
                                   value: UInt32(settings.initialWindowSize)),
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_MAX_FRAME_SIZE.rawValue), value: UInt32(settings.maxFrameSize)),
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE.rawValue),
                                   value: UInt32(settings.maxHeaderListSize)),
        ]
        _ = nghttp2_submit_settings(raw, UInt8(NGHTTP2_FLAG_NONE.rawValue), &entries, entries.count)
        if settings.connectionWindowSize > 65_535 {
            _ = nghttp2_session_set_local_window_size(raw, UInt8(NGHTTP2_FLAG_NONE.rawValue), 0, Int32(settings.connectionWindowSize))
        }
    }

    deinit {
        nghttp2_session_del(raw)
    }

    private static func connection(_ user: UnsafeMutableRawPointer) -> HTTP2Connection {
        Unmanaged<HTTP2Connection>.fromOpaque(user).takeUnretainedValue()
    }

    // MARK: Bytes in and out

    /// Feeds the bytes read; callbacks run inside. Returns nil, or the reason the connection is to end
    /// (a protocol error nghttp2 found: it has queued a GOAWAY to send first).
    /// The corresponding nghttp2 call is `nghttp2_session_mem_recv`.
    func receive(_ bytes: UnsafeRawBufferPointer) -> String? {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return nil }
        let result = nghttp2_session_mem_recv(raw, base.assumingMemoryBound(to: UInt8.self), bytes.count)
        guard result < 0 else { return nil }
        return String(cString: nghttp2_strerror(Int32(result)))
    }

    /// Hands what nghttp2 has to send, frame by frame, to `write` (each buffer valid only during the
    /// call), until nothing is left or `write` returns false (the connection's output is full). Returns
    /// false when nghttp2 failed. The corresponding nghttp2 call is `nghttp2_session_mem_send`.
    func send(_ write: (UnsafeRawBufferPointer) -> Bool) -> Bool {
        while true {
            var data: UnsafePointer<UInt8>?
            let length = nghttp2_session_mem_send(raw, &data)
            if length < 0 { return false }
            guard length > 0, let data else { return true }
            if !write(UnsafeRawBufferPointer(start: data, count: length)) { return true }
        }
    }

    /// Whether the session still reads or writes anything: when neither, the connection ends.
    var isDone: Bool { nghttp2_session_want_read(raw) == 0 && nghttp2_session_want_write(raw) == 0 }

    /// Whether frames are waiting to be serialised.
    var wantsWrite: Bool { nghttp2_session_want_write(raw) != 0 }

    // MARK: Streams

    /// The handler took `bytes` of the stream's body: open the stream's and the connection's windows by
    /// as much. The corresponding nghttp2 call is `nghttp2_session_consume`.
    func consume(_ stream: Int32, bytes: Int) {
        guard bytes > 0 else { return }
        _ = nghttp2_session_consume(raw, stream, bytes)
    }

    /// Submits a response head on `stream`; with `hasBody`, its DATA comes from the connection's
    /// ``HTTP2Connection/readBody(stream:into:endOfBody:)`` as the peer's window allows. Returns false when
    /// the stream is gone. The corresponding nghttp2 call is `nghttp2_submit_response`.
    func submitResponse(_ stream: Int32, status: Int, fields: HTTPFields, extra: HTTPEchoedRequestID?,
                        contentLength: Int?, date: ArraySlice<UInt8>?, hasBody: Bool) -> Bool {
        withHeaderBlock(status: status, fields: fields, extra: extra, contentLength: contentLength, date: date) { block, count in
            guard hasBody else { return nghttp2_submit_response(raw, stream, block, count, nil) == 0 }
            var provider = nghttp2_data_provider()
            provider.read_callback = { _, stream, buffer, length, flags, _, user in
                guard let buffer, let flags, let user else { return Int(NGHTTP2_ERR_CALLBACK_FAILURE.rawValue) }
                var endOfBody = false
                let count = NGHTTP2Session.connection(user).readBody(stream: stream, into: UnsafeMutableRawBufferPointer(start: buffer, count: length),
                                                          endOfBody: &endOfBody)
                guard let count else { return Int(NGHTTP2_ERR_DEFERRED.rawValue) }
                if endOfBody { flags.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue }
                return count
            }
            return nghttp2_submit_response(raw, stream, block, count, &provider) == 0
        }
    }

    /// Submits an informational head (`100 Continue`) on `stream`. The corresponding nghttp2 call is
    /// `nghttp2_submit_headers`.
    func submitInformational(_ stream: Int32, status: Int) {
        _ = withHeaderBlock(status: status, fields: [:], extra: nil, contentLength: nil, date: nil) { block, count in
            nghttp2_submit_headers(raw, UInt8(NGHTTP2_FLAG_NONE.rawValue), stream, nil, block, count, nil) >= 0
        }
    }

    /// A deferred body has more bytes (or its end): nghttp2 asks for them again.
    /// The corresponding nghttp2 call is `nghttp2_session_resume_data`.
    func resumeBody(_ stream: Int32) {
        _ = nghttp2_session_resume_data(raw, stream)
    }

    /// Resets `stream` with `code` (`NGHTTP2_INTERNAL_ERROR` when a handler's body failed,
    /// `NGHTTP2_REFUSED_STREAM`, `NGHTTP2_CANCEL`). The corresponding nghttp2 call is `nghttp2_submit_rst_stream`.
    func reset(_ stream: Int32, code: UInt32) {
        _ = nghttp2_submit_rst_stream(raw, UInt8(NGHTTP2_FLAG_NONE.rawValue), stream, code)
    }

    /// Graceful shutdown: a GOAWAY naming the last stream the server took, so the client retries later
    /// ones elsewhere and the streams in flight finish. The corresponding nghttp2 call is `nghttp2_submit_goaway`.
    func goAway(code: UInt32 = NGHTTP2_NO_ERROR.rawValue) {
        let last = nghttp2_session_get_last_proc_stream_id(raw)
        _ = nghttp2_submit_goaway(raw, UInt8(NGHTTP2_FLAG_NONE.rawValue), last, code, nil, 0)
    }

    /// Ends the session with a GOAWAY (`code`): no stream is read further.
    /// The corresponding nghttp2 call is `nghttp2_session_terminate_session`.
    func terminate(code: UInt32) {
        _ = nghttp2_session_terminate_session(raw, code)
    }

    /// The code of a stream reset for an internal error, a refusal and a cancellation.
    static let internalError = NGHTTP2_INTERNAL_ERROR.rawValue
    static let protocolError = NGHTTP2_PROTOCOL_ERROR.rawValue
    static let cancel = NGHTTP2_CANCEL.rawValue
    static let noError = NGHTTP2_NO_ERROR.rawValue
    /// What a callback returns to have nghttp2 reset the stream with `PROTOCOL_ERROR` and go on.
    static let resetStream = NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE.rawValue
    /// What a callback returns to end the whole session.
    static let endSession = NGHTTP2_ERR_CALLBACK_FAILURE.rawValue

    /// Lays `:status`, the fields, `extra`, `content-length` and `date` (the bytes of its value, when the
    /// fields have none) out as one block of `nghttp2_nv` (names lower-case, as swift-http-types keeps them
    /// canonically) for the duration of `body`; nghttp2 copies them.
    private func withHeaderBlock(status: Int, fields: HTTPFields, extra: HTTPEchoedRequestID?,
                                 contentLength: Int?, date: ArraySlice<UInt8>?,
                                 _ body: (UnsafePointer<nghttp2_nv>, Int) -> Bool) -> Bool {
        var storage: [UInt8] = []
        storage.reserveCapacity(256)
        var spans: [(name: Range<Int>, value: Range<Int>)] = []
        spans.reserveCapacity(fields.count + 4)
        func add(_ name: StaticString, _ value: some Collection<UInt8>) {
            let nameStart = storage.count
            storage.append(contentsOf: UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount))
            let valueStart = storage.count
            storage.append(contentsOf: value)
            spans.append((nameStart..<valueStart, valueStart..<storage.count))
        }
        func add(_ name: String, _ value: String) {
            let nameStart = storage.count
            storage.append(contentsOf: name.utf8)
            let valueStart = storage.count
            storage.append(contentsOf: value.utf8)
            spans.append((nameStart..<valueStart, valueStart..<storage.count))
        }
        add(":status", String(status).utf8)
        var hasLength = false, hasDate = false
        for field in fields where !Self.isConnectionSpecific(field.name) {
            if field.name == .contentLength { hasLength = true } else if field.name == .date { hasDate = true }
            add(field.name.canonicalName, field.value)
        }
        if let extra { add(extra.name.canonicalName, extra.value) }
        if let contentLength, !hasLength { add("content-length", String(contentLength).utf8) }
        if let date, !hasDate { add("date", date) }
        return storage.withUnsafeMutableBufferPointer { bytes in
            let base = bytes.baseAddress!
            let block = spans.map { span in
                nghttp2_nv(name: base + span.name.lowerBound, value: base + span.value.lowerBound,
                           namelen: span.name.count, valuelen: span.value.count, flags: UInt8(NGHTTP2_NV_FLAG_NONE.rawValue))
            }
            return block.withUnsafeBufferPointer { body($0.baseAddress!, $0.count) }
        }
    }

    /// Fields HTTP/2 forbids (RFC 9113 §8.2.2): a handler's `Connection: close` or `Transfer-Encoding` is
    /// HTTP/1's framing, dropped rather than sent as a malformed response.
    private static func isConnectionSpecific(_ name: HTTPField.Name) -> Bool {
        switch name.canonicalName {
        case "connection", "transfer-encoding", "upgrade", "proxy-connection", "keep-alive": true
        default: false
        }
    }
}

/// The HTTP/2 settings a server sends and the limits it keeps (``HTTPServer/Configuration/http2``).
///
/// A plain value; safe from any thread.
public struct HTTP2Settings: Sendable, Hashable {
    /// Streams a client may have open at once (`SETTINGS_MAX_CONCURRENT_STREAMS`). Default 100.
    public var maxConcurrentStreams = 100
    /// Bytes a client may send on one stream before the handler reads them
    /// (`SETTINGS_INITIAL_WINDOW_SIZE`): the stream's body buffer. Default 64 KiB.
    public var initialWindowSize = 65_536
    /// Bytes a client may send on all streams before the handlers read them: the connection's window.
    /// Default 1 MiB.
    public var connectionWindowSize = 1 << 20
    /// The largest frame payload the server takes (`SETTINGS_MAX_FRAME_SIZE`). Default 16 KiB, the least.
    public var maxFrameSize = 16_384
    /// The largest request head, names and values with 32 bytes each (`SETTINGS_MAX_HEADER_LIST_SIZE`).
    /// Default 64 KiB.
    public var maxHeaderListSize = 65_536
    /// Streams a client may reset at once before the rate applies (rapid reset, CVE-2023-44487). Default 1,000.
    public var resetBurst = 1000
    /// Stream resets a second a client may go on with after the burst; past it the connection ends with
    /// GOAWAY. Default 33.
    public var resetsPerSecond = 33

    /// The defaults.
    public init() {}
}
