import HTTPTypes

/// Serialises a response straight into the output space its connection lends: inside a read callback,
/// the loop's write batch, so a response head is written where it is sent from (no buffer of its own, no
/// copy between connections).
///
/// The space is lent with a capacity (``HTTPConnection/writeEncoded(estimate:followedBy:_:)``): the encoder writes up
/// to it and, past it, only counts, so a response that did not fit reports the exact size it needs and is
/// serialised again into that much.
///
/// The server sets `Date`, `Content-Length` or `Transfer-Encoding: chunked`, and `Connection`; those
/// fields are dropped from the handler's response. A value used during one write, on the loop's thread.
struct HTTPResponseEncoder {
    private let base: UnsafeMutableRawPointer?
    private let capacity: Int
    /// The bytes written; past the capacity, the bytes the response needs (those past it are not stored).
    private(set) var count = 0

    /// An encoder that writes from the start of `buffer`.
    init(into buffer: UnsafeMutableRawBufferPointer) {
        base = buffer.baseAddress
        capacity = buffer.count
    }

    /// Whether everything appended was stored (else ``count`` is the capacity it needs).
    var fits: Bool { count <= capacity }

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
    ///   - status: The response's status.
    ///   - fields: The handler's fields (those the server sets itself are left out).
    ///   - framing: How the body follows.
    ///   - keepAlive: Whether the connection stays open; when not, `Connection: close` is written.
    ///   - http10: The client spoke HTTP/1.0: a kept-alive connection says `Connection: keep-alive`.
    ///   - date: The cached `Date` field line.
    ///   - requestID: The request id, written after the handler's fields unless they carry its field
    ///     already (told apart in the same pass that writes them: no lookup of its own); nil: none.
    mutating func appendHead(status: HTTPResponse.Status, fields: HTTPFields, framing: BodyFraming,
                             keepAlive: Bool, http10: Bool, date: [UInt8], requestID: HTTPEchoedRequestID? = nil) {
        appendStatusLine(status)
        var echoesID = requestID != nil
        for field in fields {
            let name = field.name
            let length = name.canonicalName.utf8.count
            if Self.isSetByServer(name, length: length) { continue }
            if echoesID, length == requestID!.nameLength, name == requestID!.name { echoesID = false }
            appendField(name: name.rawName, value: field.value)
        }
        appendServerFields(echoesID: echoesID, requestID: requestID, framing: framing, keepAlive: keepAlive, http10: http10, date: date)
    }

    /// Appends the head with `encoded`'s lines when given, else with `fields` one by one.
    @inline(__always)
    mutating func appendHead(status: HTTPResponse.Status, fields: HTTPFields, encoded: HTTPEncodedFields?, framing: BodyFraming,
                             keepAlive: Bool, http10: Bool, date: [UInt8], requestID: HTTPEchoedRequestID?) {
        if let encoded {
            appendHead(status: status, encoded: encoded, framing: framing, keepAlive: keepAlive, http10: http10, date: date,
                       requestID: requestID)
        } else {
            appendHead(status: status, fields: fields, framing: framing, keepAlive: keepAlive, http10: http10, date: date,
                       requestID: requestID)
        }
    }

    /// Appends a status line and fields whose lines were made before (``HTTPEncodedFields``), then the
    /// server's, as ``appendHead(status:fields:framing:keepAlive:http10:date:requestID:)`` does.
    mutating func appendHead(status: HTTPResponse.Status, encoded: HTTPEncodedFields, framing: BodyFraming,
                             keepAlive: Bool, http10: Bool, date: [UInt8], requestID: HTTPEchoedRequestID? = nil) {
        appendStatusLine(status)
        encoded.lines.withUnsafeBytes { append($0) }
        let echoesID = requestID.map { !encoded.mayHoldName(ofLength: $0.nameLength) || !encoded.fields.contains($0.name) } ?? false
        appendServerFields(echoesID: echoesID, requestID: requestID, framing: framing, keepAlive: keepAlive, http10: http10, date: date)
    }

    /// The fields the server writes after the handler's: the request id (unless they carried it), `Date`,
    /// the framing, `Connection`, and the head's end.
    private mutating func appendServerFields(echoesID: Bool, requestID: HTTPEchoedRequestID?, framing: BodyFraming,
                                             keepAlive: Bool, http10: Bool, date: [UInt8]) {
        if echoesID, let requestID {  // the request id, echoed: a field the handler did not set
            appendUTF8(of: requestID.name.rawName)
            append(": ")
            if requestID.head.givenID == nil, let prefix = requestID.head.idPrefix {
                appendMadeID(requestID.head.madeID, prefix: prefix)  // written from its number, in place
            } else {
                appendUTF8(of: requestID.value)
            }
            appendLineEnd()
        }
        date.withUnsafeBytes { append($0) }
        switch framing {
        case .none:
            break
        case .length(let length):
            append("Content-Length: ")
            appendDecimal(length)
            appendLineEnd()
        case .chunked:
            append("Transfer-Encoding: chunked\r\n")
        }
        if !keepAlive {
            append("Connection: close\r\n")
        } else if http10 {
            append("Connection: keep-alive\r\n")
        }
        appendLineEnd()
    }

    /// Appends an interim `100 Continue`.
    mutating func appendContinue() {
        append(Self.continueLine)
    }

    /// Appends body bytes as they are.
    mutating func appendBody(_ bytes: UnsafeRawBufferPointer) {
        append(bytes)
    }

    /// Appends one chunk: size in hex, CRLF, data, CRLF. An empty chunk appends nothing (it would end the body).
    mutating func appendChunk(_ bytes: UnsafeRawBufferPointer) {
        guard !bytes.isEmpty else { return }
        appendHex(bytes.count)
        appendLineEnd()
        append(bytes)
        appendLineEnd()
    }

    /// The most bytes ``appendChunk(_:)`` appends around `count` bytes of data: 16 hex digits and two CRLFs.
    static func chunkCapacity(for count: Int) -> Int { count + 20 }

    /// Appends a chunk's size line alone (size in hex, CRLF): its data and CRLF follow by reference
    /// (``HTTPBodyWriter/write(_:)-(Bytes)``).
    mutating func appendChunkSizeLine(_ count: Int) {
        appendHex(count)
        appendLineEnd()
    }

    /// The most bytes ``appendChunkSizeLine(_:)`` appends: 16 hex digits and a CRLF.
    static let chunkSizeLineCapacity = 18

    /// Appends the last chunk and the empty trailer section.
    mutating func appendLastChunk() {
        append(Self.lastChunk)
    }

    // MARK: Storing

    /// Stores `bytes` when they fit; counts them either way.
    @inline(__always)
    private mutating func append(_ bytes: UnsafeRawBufferPointer) {
        let end = count + bytes.count
        if end <= capacity, !bytes.isEmpty {
            (base! + count).copyMemory(from: bytes.baseAddress!, byteCount: bytes.count)
        }
        count = end
    }

    /// Stores a literal's UTF-8 bytes (no allocation, no lazy global).
    @inline(__always)
    private mutating func append(_ literal: StaticString) {
        append(UnsafeRawBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount))
    }

    @inline(__always)
    private mutating func append(byte: UInt8) {
        if count < capacity { base!.storeBytes(of: byte, toByteOffset: count, as: UInt8.self) }
        count += 1
    }

    @inline(__always)
    private mutating func appendLineEnd() {
        if count + 2 <= capacity {
            base!.storeBytes(of: ASCII.cr, toByteOffset: count, as: UInt8.self)
            base!.storeBytes(of: ASCII.lf, toByteOffset: count + 1, as: UInt8.self)
        }
        count += 2
    }

    /// Appends `name: value` and CRLF, each string copied from its UTF-8 storage in one go.
    @inline(__always)
    /// The field lines of `fields` (those the server sets left out), for ``HTTPEncodedFields``.
    static func fieldLines(of fields: HTTPFields) -> [UInt8] {
        var lines: [UInt8] = []
        for field in fields where !isSetByServer(field.name, length: field.name.canonicalName.utf8.count) {
            lines += field.name.rawName.utf8
            lines += ": ".utf8
            lines += field.value.utf8
            lines += "\r\n".utf8
        }
        return lines
    }

    private mutating func appendField(name: String, value: String) {
        appendUTF8(of: name)
        append(": ")
        appendUTF8(of: value)
        appendLineEnd()
    }

    /// Appends a string's UTF-8 bytes (a copy of its contiguous storage, not a walk of its UTF-8 view).
    @inline(__always)
    private mutating func appendUTF8(of string: String) {
        var string = string
        string.withUTF8 { append(UnsafeRawBufferPointer($0)) }
    }

    /// A field the server writes itself (`Content-Length`, `Transfer-Encoding`, `Date`, `Connection`),
    /// dropped from the handler's response. Names of other lengths (`length`, the canonical name's) are
    /// told apart without a comparison.
    @inline(__always)
    private static func isSetByServer(_ name: HTTPField.Name, length: Int) -> Bool {
        switch length {
        case 4: name == .date
        case 10: name == .connection
        case 14: name == .contentLength
        case 17: name == .transferEncoding
        default: false
        }
    }

    private mutating func appendStatusLine(_ status: HTTPResponse.Status) {
        if status.code == 200 && status.reasonPhrase == "OK" {
            append("HTTP/1.1 200 OK\r\n")
            return
        }
        append("HTTP/1.1 ")
        let code = status.code
        append(byte: UInt8(ascii: "0") + UInt8(code / 100 % 10))
        append(byte: UInt8(ascii: "0") + UInt8(code / 10 % 10))
        append(byte: UInt8(ascii: "0") + UInt8(code % 10))
        append(byte: ASCII.space)
        appendUTF8(of: status.reasonPhrase)
        appendLineEnd()
    }

    /// Appends `value` (not negative) in decimal: two digits at a time from a literal's pairs "00"–"99",
    /// written backwards into a word-sized scratch and copied once (a digit count and a division per digit
    /// cost about a hundred instructions for a short body's length).
    private mutating func appendDecimal(_ value: Int) {
        if value < 10 {
            append(byte: UInt8(ascii: "0") + UInt8(value))
            return
        }
        let pairs = UnsafeRawPointer(Self.digitPairs.utf8Start)
        withUnsafeTemporaryAllocation(byteCount: 20, alignment: 8) { scratch in
            var rest = UInt(value)
            var start = 20
            while rest >= 100 {
                let pair = Int(rest % 100)
                rest /= 100
                start -= 2
                scratch.storeBytes(of: pairs.loadUnaligned(fromByteOffset: pair * 2, as: UInt16.self), toByteOffset: start, as: UInt16.self)
            }
            if rest >= 10 {
                start -= 2
                scratch.storeBytes(of: pairs.loadUnaligned(fromByteOffset: Int(rest) * 2, as: UInt16.self), toByteOffset: start, as: UInt16.self)
            } else {
                start -= 1
                scratch[start] = UInt8(ascii: "0") + UInt8(rest)
            }
            append(UnsafeRawBufferPointer(rebasing: scratch[start...]))
        }
    }

    private static let digitPairs: StaticString = """
        00010203040506070809101112131415161718192021222324252627282930313233343536373839\
        40414243444546474849505152535455565758596061626364656667686970717273747576777879\
        8081828384858687888990919293949596979899
        """

    /// Appends the id numbered `number` of the generator whose prefix is `prefix`.
    private mutating func appendMadeID(_ number: UInt64, prefix: HTTPRequestIDGenerator.Prefix) {
        let length = prefix.count + HTTPRequestIDGenerator.Prefix.digitCount(of: number)
        if count + length <= capacity {
            (base! + count).copyMemory(from: prefix.start, byteCount: prefix.count)
            HTTPRequestIDGenerator.Prefix.writeDigits(of: number, to: base! + count + prefix.count)
        }
        count += length
    }

    private mutating func appendHex(_ value: Int) {
        var shift = (Int.bitWidth - value.leadingZeroBitCount - 1) / 4 * 4
        while shift >= 0 {
            let digit = UInt8((value >> shift) & 0xF)
            append(byte: digit < 10 ? UInt8(ascii: "0") + digit : UInt8(ascii: "a") + digit - 10)
            shift -= 4
        }
    }

    static let continueLine: StaticString = "HTTP/1.1 100 Continue\r\n\r\n"
    static let lastChunk: StaticString = "0\r\n\r\n"
}

/// A response's fields with their HTTP/1 lines, made once for the many responses that carry the same
/// fields (a kept file's): the encoder copies the lines rather than writes the fields one by one. HTTP/2
/// encodes ``fields`` as ever. Immutable; safe from any thread.
final class HTTPEncodedFields: Sendable {
    /// The fields.
    let fields: HTTPFields
    /// Their lines, `Name: value\r\n` each, those the server sets left out.
    let lines: [UInt8]
    /// A bit for each canonical name length below 64 among the fields (bit 63 for any longer).
    private let nameLengths: UInt64

    init(_ fields: HTTPFields) {
        self.fields = fields
        lines = HTTPResponseEncoder.fieldLines(of: fields)
        nameLengths = fields.reduce(0) { $0 | 1 << min(63, $1.name.canonicalName.utf8.count) }
    }

    /// Whether a field's name may be `length` bytes long (false: none is).
    func mayHoldName(ofLength length: Int) -> Bool { nameLengths & (1 << min(63, length)) != 0 }
}
