import CNGHTTP2

// The one file of LoopKitHTTPTesting that calls nghttp2 (Debian's libnghttp2-dev), here as a *client*: the
// HTTP/2 test modes' requests are framed, HPACK-coded and flow-controlled by nghttp2's client session, the
// same library the server's codec runs on, so no HTTP/2 is written by hand on either side. nghttp2 does no
// I/O: ``HTTP2Transport`` feeds it the bytes the server sent (``receive(_:)``) and sends what it
// serialises (``takeOutput()``).

/// One client-side nghttp2 session: what an ``HTTPTestClient`` in an HTTP/2 mode speaks to the server.
/// Used on the client's thread only (the transport's), like everything of the client.
final class HTTP2ClientSession {
    /// The nghttp2 session (`nghttp2_session *`).
    private let raw: OpaquePointer

    /// A session whose callbacks go to `transport` (not retained: the transport owns the session). Its
    /// first output is the connection preface and a SETTINGS frame opening a stream window of
    /// `streamWindow` bytes and a connection window of `connectionWindow`; window updates are automatic
    /// (nghttp2's default for a client), as a browser's are.
    init(transport: HTTP2Transport, streamWindow: Int, connectionWindow: Int) {
        var callbacks: OpaquePointer?
        nghttp2_session_callbacks_new(&callbacks)
        defer { nghttp2_session_callbacks_del(callbacks) }
        nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks) { _, frame, user in
            guard let frame, let user else { return 0 }
            HTTP2ClientSession.transport(user).headerBlockBegan(stream: frame.pointee.hd.stream_id)
            return 0
        }
        nghttp2_session_callbacks_set_on_header_callback(callbacks) { _, frame, name, nameLength, value, valueLength, _, user in
            guard let frame, let user else { return 0 }
            HTTP2ClientSession.transport(user).headerArrived(
                stream: frame.pointee.hd.stream_id,
                name: String(decoding: UnsafeBufferPointer(start: name, count: nameLength), as: UTF8.self),
                value: String(decoding: UnsafeBufferPointer(start: value, count: valueLength), as: UTF8.self))
            return 0
        }
        nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks) { _, frame, user in
            guard let frame, let user else { return 0 }
            let header = frame.pointee.hd
            let endsStream = header.flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0
            switch UInt32(header.type) {
            case NGHTTP2_HEADERS.rawValue:
                HTTP2ClientSession.transport(user).headerBlockEnded(stream: header.stream_id, endsStream: endsStream)
            case NGHTTP2_DATA.rawValue where endsStream:
                HTTP2ClientSession.transport(user).bodyEnded(stream: header.stream_id)
            case NGHTTP2_GOAWAY.rawValue:
                HTTP2ClientSession.transport(user).goAwayArrived(lastStream: frame.pointee.goaway.last_stream_id)
            default:
                break
            }
            return 0
        }
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks) { _, _, stream, data, length, user in
            guard let user else { return 0 }
            HTTP2ClientSession.transport(user).bodyArrived(stream: stream, Array(UnsafeBufferPointer(start: data, count: length)))
            return 0
        }
        nghttp2_session_callbacks_set_on_stream_close_callback(callbacks) { _, stream, errorCode, user in
            guard let user else { return 0 }
            HTTP2ClientSession.transport(user).streamClosed(stream, errorCode: errorCode)
            return 0
        }
        var session: OpaquePointer?
        let user = Unmanaged.passUnretained(transport).toOpaque()
        let result = nghttp2_session_client_new(&session, callbacks, user)
        precondition(result == 0 && session != nil, "nghttp2_session_client_new: out of memory")
        raw = session!
        var entries = [
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE.rawValue), value: UInt32(streamWindow)),
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_ENABLE_PUSH.rawValue), value: 0),
        ]
        _ = nghttp2_submit_settings(raw, UInt8(NGHTTP2_FLAG_NONE.rawValue), &entries, entries.count)
        if connectionWindow > 65_535 {
            _ = nghttp2_session_set_local_window_size(raw, UInt8(NGHTTP2_FLAG_NONE.rawValue), 0, Int32(connectionWindow))
        }
    }

    deinit {
        nghttp2_session_del(raw)
    }

    private static func transport(_ user: UnsafeMutableRawPointer) -> HTTP2Transport {
        Unmanaged<HTTP2Transport>.fromOpaque(user).takeUnretainedValue()
    }

    /// Feeds the bytes the server sent; the callbacks run inside. Returns nil, or nghttp2's reason when the
    /// bytes break HTTP/2 (a server bug the test is to see). The corresponding nghttp2 call is
    /// `nghttp2_session_mem_recv`.
    func receive(_ bytes: [UInt8]) -> String? {
        guard !bytes.isEmpty else { return nil }
        let result = bytes.withUnsafeBufferPointer { nghttp2_session_mem_recv(raw, $0.baseAddress!, $0.count) }
        guard result < 0 else { return nil }
        return String(cString: nghttp2_strerror(Int32(result)))
    }

    /// Everything nghttp2 has to send now (the preface, requests, bodies as the server's windows allow,
    /// acknowledgements, window updates). The corresponding nghttp2 call is `nghttp2_session_mem_send`.
    func takeOutput() -> [UInt8] {
        var output: [UInt8] = []
        while true {
            var data: UnsafePointer<UInt8>?
            let length = nghttp2_session_mem_send(raw, &data)
            guard length > 0, let data else { return output }
            output.append(contentsOf: UnsafeBufferPointer(start: data, count: length))
        }
    }

    /// Submits a request: `fields` in order, pseudo-headers first (names lower-case). With `hasBody`, its
    /// DATA comes from the transport's ``HTTP2Transport/readBody(stream:into:endOfBody:)`` as the server's
    /// window allows. Returns the stream's id, or nil when nghttp2 refuses (no stream ids left, a GOAWAY
    /// received). The corresponding nghttp2 call is `nghttp2_submit_request`.
    func submitRequest(_ fields: [(name: String, value: String)], hasBody: Bool) -> Int32? {
        var storage: [UInt8] = []
        var spans: [(name: Range<Int>, value: Range<Int>)] = []
        for field in fields {
            let nameStart = storage.count
            storage.append(contentsOf: field.name.utf8)
            let valueStart = storage.count
            storage.append(contentsOf: field.value.utf8)
            spans.append((nameStart..<valueStart, valueStart..<storage.count))
        }
        storage.append(0)  // never empty: a base address for the block
        let stream = storage.withUnsafeMutableBufferPointer { bytes -> Int32 in
            let base = bytes.baseAddress!
            let block = spans.map { span in
                nghttp2_nv(name: base + span.name.lowerBound, value: base + span.value.lowerBound,
                           namelen: span.name.count, valuelen: span.value.count, flags: UInt8(NGHTTP2_NV_FLAG_NONE.rawValue))
            }
            return block.withUnsafeBufferPointer { block in
                guard hasBody else { return nghttp2_submit_request(raw, nil, block.baseAddress, block.count, nil, nil) }
                var provider = nghttp2_data_provider()
                provider.read_callback = { _, stream, buffer, length, flags, _, user in
                    guard let buffer, let flags, let user else { return Int(NGHTTP2_ERR_CALLBACK_FAILURE.rawValue) }
                    var endOfBody = false
                    let count = HTTP2ClientSession.transport(user).readBody(
                        stream: stream, into: UnsafeMutableRawBufferPointer(start: buffer, count: length), endOfBody: &endOfBody)
                    guard let count else { return Int(NGHTTP2_ERR_DEFERRED.rawValue) }
                    if endOfBody { flags.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue }
                    return count
                }
                return nghttp2_submit_request(raw, nil, block.baseAddress, block.count, &provider, nil)
            }
        }
        return stream > 0 ? stream : nil
    }

    /// A deferred request body has more bytes (or its end): nghttp2 asks for them again.
    /// The corresponding nghttp2 call is `nghttp2_session_resume_data`.
    func resumeBody(_ stream: Int32) {
        _ = nghttp2_session_resume_data(raw, stream)
    }

    /// Ends the session with a GOAWAY (the client's end closing). The corresponding nghttp2 call is
    /// `nghttp2_session_terminate_session`.
    func terminate() {
        _ = nghttp2_session_terminate_session(raw, NGHTTP2_NO_ERROR.rawValue)
    }

    /// The text of an HTTP/2 error code (RST_STREAM's, GOAWAY's): `PROTOCOL_ERROR`, `CANCEL`…
    /// The corresponding nghttp2 call is `nghttp2_http2_strerror`.
    static func name(ofErrorCode code: UInt32) -> String {
        String(cString: nghttp2_http2_strerror(code))
    }
}
