import HTTPTypes

/// A response head built from the lines curl's header callback hands over (status line, field lines, the
/// blank line), read as bytes: no `String` is made but the values kept, the names curl's responses carry
/// most are statics, and what the transfer asks of the head (its encoding, a `Location`) is noted as the
/// lines go by rather than looked up afterwards. Per line it costs a few hundred instructions where the
/// `String`-splitting parse cost about ten thousand (`make bench-client-callgrind`).
///
/// A new status line (an interim 1xx, a redirect that is followed) starts the head afresh.
struct ResponseHeadParser {
    private(set) var status: HTTPResponse.Status?
    private(set) var fields = HTTPFields()
    /// The head's first `Content-Encoding` names a coding other than `identity`.
    private(set) var isEncoded = false
    /// The head has a `Location` field.
    private(set) var hasLocation = false
    private var sawContentEncoding = false

    /// What one line was.
    enum Line {
        /// The status line or a field line: the head goes on.
        case partOfHead
        /// The blank line that ends a head (when a status line came first).
        case end
        /// A line that is none of the above (a blank line before any status line): ignored.
        case ignored
    }

    /// Reads one line, `CRLF` (or a bare `LF`) included.
    mutating func read(_ line: UnsafeRawBufferPointer) -> Line {
        var end = line.count
        while end > 0 && (line[end - 1] == 0x0A || line[end - 1] == 0x0D) { end -= 1 }
        let text = UnsafeRawBufferPointer(rebasing: line[..<end])
        if text.isEmpty { return status == nil ? .ignored : .end }
        if Self.isStatusLine(text) {
            readStatusLine(text)
        } else {
            readFieldLine(text)
        }
        return .partOfHead
    }

    private static func isStatusLine(_ text: UnsafeRawBufferPointer) -> Bool {
        text.count >= 5 && text[0] == UInt8(ascii: "H") && text[1] == UInt8(ascii: "T") && text[2] == UInt8(ascii: "T")
            && text[3] == UInt8(ascii: "P") && text[4] == UInt8(ascii: "/")
    }

    /// `HTTP/1.1 200 OK` or curl's `HTTP/2 200`: the code (0 when it is not three digits) and the reason.
    private mutating func readStatusLine(_ text: UnsafeRawBufferPointer) {
        var index = 5
        while index < text.count && text[index] != UInt8(ascii: " ") { index += 1 }
        while index < text.count && text[index] == UInt8(ascii: " ") { index += 1 }
        var code = 0, digits = 0
        while index < text.count, text[index] &- UInt8(ascii: "0") < 10, digits < 4 {
            code = code * 10 + Int(text[index] &- UInt8(ascii: "0"))
            digits += 1
            index += 1
        }
        if digits != 3 { code = 0 }
        while index < text.count && text[index] == UInt8(ascii: " ") { index += 1 }
        var reasonEnd = text.count
        while reasonEnd > index && (text[reasonEnd - 1] == UInt8(ascii: " ") || text[reasonEnd - 1] == UInt8(ascii: "\t")) { reasonEnd -= 1 }
        let reason = index < reasonEnd ? String(decoding: UnsafeRawBufferPointer(rebasing: text[index..<reasonEnd]), as: UTF8.self) : ""
        status = HTTPResponse.Status(code: code, reasonPhrase: reason)
        fields = HTTPFields()
        fields.reserveCapacity(8)
        isEncoded = false
        hasLocation = false
        sawContentEncoding = false
    }

    /// `Name: value`; a line without a colon, or with a name that is not a token, is left out.
    private mutating func readFieldLine(_ text: UnsafeRawBufferPointer) {
        guard let colon = text.firstIndex(of: UInt8(ascii: ":")), colon > 0 else { return }
        var valueStart = colon + 1, valueEnd = text.count
        while valueStart < valueEnd && (text[valueStart] == UInt8(ascii: " ") || text[valueStart] == UInt8(ascii: "\t")) { valueStart += 1 }
        while valueEnd > valueStart && (text[valueEnd - 1] == UInt8(ascii: " ") || text[valueEnd - 1] == UInt8(ascii: "\t")) { valueEnd -= 1 }
        // Spaces around a name are not allowed (RFC 9112 §5.1) but were always forgiven here.
        var nameStart = 0, nameEnd = colon
        while nameStart < nameEnd && (text[nameStart] == UInt8(ascii: " ") || text[nameStart] == UInt8(ascii: "\t")) { nameStart += 1 }
        while nameEnd > nameStart && (text[nameEnd - 1] == UInt8(ascii: " ") || text[nameEnd - 1] == UInt8(ascii: "\t")) { nameEnd -= 1 }
        let nameBytes = UnsafeRawBufferPointer(rebasing: text[nameStart..<nameEnd])
        let value = UnsafeRawBufferPointer(rebasing: text[valueStart..<valueEnd])
        let name: HTTPField.Name
        if let known = Self.knownName(nameBytes) {
            name = known
        } else if let parsed = HTTPField.Name(String(decoding: nameBytes, as: UTF8.self)) {
            name = parsed
        } else {
            return
        }
        if nameBytes.count == 16 && name == .contentEncoding && !sawContentEncoding {
            sawContentEncoding = true
            isEncoded = !Self.equalsIgnoringCase(value, "identity")
        } else if nameBytes.count == 8 && name == .location {
            hasLocation = true
        }
        // ASCII is stored as a string without the generic UTF-8 validation; `HTTPField(name:value:)` still
        // replaces what a value may not hold. Other bytes are kept as they came (`lenientValue:`).
        var highBits: UInt8 = 0
        for byte in value { highBits |= byte }
        if highBits < 0x80 {
            fields.append(HTTPField(name: name, value: String(decoding: value, as: UTF8.self)))
        } else {
            fields.append(HTTPField(name: name, lenientValue: value))
        }
    }

    /// The statics of the names responses carry most, matched without a string (nil for any other).
    private static func knownName(_ name: UnsafeRawBufferPointer) -> HTTPField.Name? {
        switch name.count {
        case 3:
            if equalsIgnoringCase(name, "age") { return .age }
            if equalsIgnoringCase(name, "via") { return .via }
        case 4:
            if equalsIgnoringCase(name, "date") { return .date }
            if equalsIgnoringCase(name, "etag") { return .eTag }
            if equalsIgnoringCase(name, "vary") { return .vary }
        case 6:
            if equalsIgnoringCase(name, "server") { return .server }
        case 7:
            if equalsIgnoringCase(name, "expires") { return .expires }
        case 8:
            if equalsIgnoringCase(name, "location") { return .location }
        case 10:
            if equalsIgnoringCase(name, "connection") { return .connection }
            if equalsIgnoringCase(name, "set-cookie") { return .setCookie }
        case 12:
            if equalsIgnoringCase(name, "content-type") { return .contentType }
            if equalsIgnoringCase(name, "x-request-id") { return requestID }
        case 13:
            if equalsIgnoringCase(name, "cache-control") { return .cacheControl }
            if equalsIgnoringCase(name, "last-modified") { return .lastModified }
            if equalsIgnoringCase(name, "accept-ranges") { return .acceptRanges }
            if equalsIgnoringCase(name, "content-range") { return .contentRange }
        case 14:
            if equalsIgnoringCase(name, "content-length") { return .contentLength }
        case 16:
            if equalsIgnoringCase(name, "content-encoding") { return .contentEncoding }
        case 17:
            if equalsIgnoringCase(name, "transfer-encoding") { return .transferEncoding }
        default:
            break
        }
        return nil
    }

    /// `X-Request-ID`, which `LoopDemo serve` and many proxies add to every response.
    private static let requestID = HTTPField.Name("X-Request-ID")!

    /// Whether `bytes` spell `lowercase` (ASCII letters, digits and punctuation) in any case.
    private static func equalsIgnoringCase(_ bytes: UnsafeRawBufferPointer, _ lowercase: StaticString) -> Bool {
        guard bytes.count == lowercase.utf8CodeUnitCount else { return false }
        let expected = lowercase.utf8Start
        for index in 0..<bytes.count {
            var byte = bytes[index]
            if byte &- UInt8(ascii: "A") < 26 { byte |= 0x20 }
            if byte != expected[index] { return false }
        }
        return true
    }
}
