import HTTPTypes

/// Serializes responses into one contiguous, reused buffer, so that a response (or several pipelined
/// ones) goes out in one write.
///
/// The server sets `Date`, `Content-Length` or `Transfer-Encoding: chunked`, and `Connection`; those
/// fields are dropped from the handler's response. Loop-confined: one per loop, shared by its
/// connections (each writes what it serialised before another one serialises).
struct HTTPResponseEncoder {
    /// The bytes waiting to be written. Nothing is reserved before the first response, and after a
    /// write at most ``keptCapacity`` stays reserved.
    var buffer: [UInt8] = []

    /// The most capacity the buffer keeps between writes (a large body's capacity is given back).
    static let keptCapacity = 256 * 1024
    /// What the buffer reserves for its first response: a typical head and a short body.
    static let firstCapacity = 512

    init() {}

    /// Empties the buffer once its bytes are written, keeping a small capacity for the next response.
    mutating func written() {
        buffer.removeAll(keepingCapacity: buffer.capacity <= Self.keptCapacity)
    }

    /// How the body of a response is framed on the wire.
    enum BodyFraming: Equatable {
        /// No body and no `Content-Length` (1xx, 204, 304).
        case none
        /// `Content-Length: n`; for `HEAD` the body itself is left out.
        case length(Int)
        /// `Transfer-Encoding: chunked`.
        case chunked
    }

    /// Appends a status line and fields.
    ///
    /// - Parameters:
    ///   - response: The handler's response.
    ///   - status: `response.status` when the caller has read it already (`HTTPResponse` parses it from a
    ///     field at every read); nil: read here.
    ///   - framing: How the body follows.
    ///   - keepAlive: Whether the connection stays open; when not, `Connection: close` is written.
    ///   - http10: The client spoke HTTP/1.0: a kept-alive connection says `Connection: keep-alive`.
    ///   - date: The cached `Date` field line.
    ///   - extraField: A field written before the response's own (the echoed request id), or nil.
    mutating func appendHead(_ response: HTTPResponse, status: HTTPResponse.Status? = nil, framing: BodyFraming,
                             keepAlive: Bool, http10: Bool, date: [UInt8],
                             extraField: (name: HTTPField.Name, value: String)? = nil) {
        if buffer.capacity == 0 { buffer.reserveCapacity(Self.firstCapacity) }
        appendStatusLine(status ?? response.status)
        if let extraField {  // the request id, echoed: a field the handler did not set
            appendField(name: extraField.name.rawName, value: extraField.value)
        }
        for field in response.headerFields where !Self.isSetByServer(field.name) {
            appendField(name: field.name.rawName, value: field.value)
        }
        buffer += date
        switch framing {
        case .none:
            break
        case .length(let length):
            buffer += Self.contentLengthPrefix
            appendDecimal(length)
            buffer.append(ASCII.cr)
            buffer.append(ASCII.lf)
        case .chunked:
            buffer += Self.chunkedLine
        }
        if !keepAlive {
            buffer += Self.closeLine
        } else if http10 {
            buffer += Self.keepAliveLine
        }
        buffer.append(ASCII.cr)
        buffer.append(ASCII.lf)
    }

    /// Appends an interim `100 Continue`.
    mutating func appendContinue() {
        buffer += Self.continueLine
    }

    /// Appends body bytes as they are.
    mutating func appendBody(_ bytes: UnsafeRawBufferPointer) {
        buffer.append(contentsOf: bytes)
    }

    /// Appends one chunk: size in hex, CRLF, data, CRLF. An empty chunk appends nothing (it would end the body).
    mutating func appendChunk(_ bytes: UnsafeRawBufferPointer) {
        guard !bytes.isEmpty else { return }
        appendHex(bytes.count)
        buffer.append(ASCII.cr)
        buffer.append(ASCII.lf)
        buffer.append(contentsOf: bytes)
        buffer.append(ASCII.cr)
        buffer.append(ASCII.lf)
    }

    /// Appends the last chunk and the empty trailer section.
    mutating func appendLastChunk() {
        buffer += Self.lastChunk
    }

    /// Appends `name: value` and CRLF, each string copied from its UTF-8 storage in one go.
    @inline(__always)
    private mutating func appendField(name: String, value: String) {
        appendUTF8(of: name)
        buffer.append(ASCII.colon)
        buffer.append(ASCII.space)
        appendUTF8(of: value)
        buffer.append(ASCII.cr)
        buffer.append(ASCII.lf)
    }

    /// Appends a string's UTF-8 bytes (a copy of its contiguous storage, not a walk of its UTF-8 view).
    @inline(__always)
    private mutating func appendUTF8(of string: String) {
        var string = string
        string.withUTF8 { buffer.append(contentsOf: $0) }
    }

    /// A field the server writes itself (`Content-Length`, `Transfer-Encoding`, `Date`, `Connection`),
    /// dropped from the handler's response. Names of other lengths are told apart without a comparison.
    @inline(__always)
    private static func isSetByServer(_ name: HTTPField.Name) -> Bool {
        switch name.canonicalName.utf8.count {
        case 4: name == .date
        case 10: name == .connection
        case 14: name == .contentLength
        case 17: name == .transferEncoding
        default: false
        }
    }

    private mutating func appendStatusLine(_ status: HTTPResponse.Status) {
        if status.code == 200 && status.reasonPhrase == "OK" {
            buffer += Self.okLine
            return
        }
        buffer += Self.versionPrefix
        let code = status.code
        buffer.append(UInt8(ascii: "0") + UInt8(code / 100 % 10))
        buffer.append(UInt8(ascii: "0") + UInt8(code / 10 % 10))
        buffer.append(UInt8(ascii: "0") + UInt8(code % 10))
        buffer.append(ASCII.space)
        appendUTF8(of: status.reasonPhrase)
        buffer.append(ASCII.cr)
        buffer.append(ASCII.lf)
    }

    private mutating func appendDecimal(_ value: Int) {
        if value < 10 {
            buffer.append(UInt8(ascii: "0") + UInt8(value))
            return
        }
        var digits: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
                     UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) =
            (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        var count = 0
        var rest = value
        withUnsafeMutableBytes(of: &digits) { raw in
            while rest > 0 {
                raw[count] = UInt8(ascii: "0") + UInt8(rest % 10)
                rest /= 10
                count += 1
            }
            for index in stride(from: count - 1, through: 0, by: -1) { buffer.append(raw[index]) }
        }
    }

    private mutating func appendHex(_ value: Int) {
        let hex: [UInt8] = Array("0123456789abcdef".utf8)
        var shift = (Int.bitWidth - value.leadingZeroBitCount - 1) / 4 * 4
        while shift >= 0 {
            buffer.append(hex[(value >> shift) & 0xF])
            shift -= 4
        }
    }

    static let versionPrefix: [UInt8] = Array("HTTP/1.1 ".utf8)
    static let okLine: [UInt8] = Array("HTTP/1.1 200 OK\r\n".utf8)
    static let continueLine: [UInt8] = Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)
    static let contentLengthPrefix: [UInt8] = Array("Content-Length: ".utf8)
    static let chunkedLine: [UInt8] = Array("Transfer-Encoding: chunked\r\n".utf8)
    static let closeLine: [UInt8] = Array("Connection: close\r\n".utf8)
    static let keepAliveLine: [UInt8] = Array("Connection: keep-alive\r\n".utf8)
    static let lastChunk: [UInt8] = Array("0\r\n\r\n".utf8)
}
