import HTTPTypes

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// An incremental HTTP/1.1 request parser (RFC 9112) over borrowed bytes.
///
/// The caller keeps the bytes it has received in one buffer, calls ``parse(_:)`` with all of them, drops
/// the `consumed` prefix, and calls again; when the parser answers ``Event/needMoreBytes`` it waits for
/// more bytes, appends them to what was left, and calls again. The parser copies a head's method, target
/// and field lines (the `HTTPRequest` is built from them when first read: ``HTTPRequestHead/request``);
/// bodies come back as ranges of the caller's bytes.
///
/// The events of one request are `head`, then zero or more `body`, then `end`; the next request's `head`
/// follows (pipelining). Any thrown ``HTTPRequestError`` is final: the parser and the connection are done.
///
/// How the bytes are split does not change the events (nor the bytes of the bodies).
///
/// A value type with no thread of its own: use it from one thread at a time.
public struct HTTPRequestParser: Sendable {
    /// What one call of ``parse(_:)`` found.
    public enum Event: Sendable, Hashable {
        /// The bytes hold no complete event: call again once more bytes have arrived.
        case needMoreBytes
        /// A request head.
        case head(HTTPRequestHead)
        /// Body bytes: this range of the buffer passed in (already decoded from chunked framing).
        case body(Range<Int>)
        /// The end of the current request's body.
        case end
    }

    enum State: Sendable {
        /// Waiting for a head; `scanned` bytes were already searched for its end.
        case head(scanned: Int)
        case fixedBody(remaining: Int)
        case chunkSize
        case chunkData(remaining: Int)
        case chunkDataEnd
        case trailers(size: Int)
        /// The body is complete: the next call reports ``Event/end``.
        case endPending
    }

    /// The limits this parser enforces.
    public let limits: HTTPParserLimits
    var state: State = .head(scanned: 0)
    /// An ended request's head that nothing references any more, for the next head to be parsed into
    /// (``HTTPParsedHead/make(method:target:scheme:targetAuthority:fieldLines:reusing:)``); given by the
    /// connection (``HTTPExchange/takeHeadIfUnreferenced()``).
    var spareHead: HTTPParsedHead?
    /// Decoded body bytes of the current chunked request.
    var chunkedTotal = 0
    /// The trailer fields of the last chunked body, once its ``Event/end`` is reported (nil when it had
    /// none, and for other bodies); reset by the next head.
    public private(set) var trailers: HTTPFields?

    /// Creates a parser waiting for a request head.
    /// - Parameter limits: The limits to enforce.
    public init(limits: HTTPParserLimits = HTTPParserLimits()) {
        self.limits = limits
    }

    /// Whether the parser is between requests: no part of a request has been consumed.
    public var isAtRequestBoundary: Bool {
        if case .head = state { return true }
        return false
    }

    /// Parses the next event out of `bytes`.
    ///
    /// - Parameter bytes: Every byte received and not yet consumed, in order.
    /// - Returns: The event and how many bytes of the front of `bytes` it consumed (the caller drops them).
    ///   A ``Event/body(_:)`` range lies within the consumed bytes.
    /// - Throws: ``HTTPRequestError`` when the request breaks a rule or a limit.
    public mutating func parse(_ bytes: UnsafeRawBufferPointer) throws(HTTPRequestError) -> (event: Event, consumed: Int) {
        switch state {
        case .head(let scanned):
            return try parseHead(bytes, scanned: scanned)
        case .fixedBody(let remaining):
            guard !bytes.isEmpty else { return (.needMoreBytes, 0) }
            let taken = min(remaining, bytes.count)
            state = taken == remaining ? .endPending : .fixedBody(remaining: remaining - taken)
            return (.body(0..<taken), taken)
        case .chunkSize:
            return try parseChunkSize(bytes)
        case .chunkData(let remaining):
            guard !bytes.isEmpty else { return (.needMoreBytes, 0) }
            let taken = min(remaining, bytes.count)
            state = taken == remaining ? .chunkDataEnd : .chunkData(remaining: remaining - taken)
            return (.body(0..<taken), taken)
        case .chunkDataEnd:
            guard bytes.count >= 2 else {
                if bytes.count == 1 && bytes[0] != ASCII.cr { throw .invalidChunkTerminator }
                return (.needMoreBytes, 0)
            }
            guard bytes[0] == ASCII.cr && bytes[1] == ASCII.lf else { throw .invalidChunkTerminator }
            state = .chunkSize
            let (event, consumed) = try parseChunkSize(UnsafeRawBufferPointer(rebasing: bytes[2...]))
            if case .body(let range) = event { return (.body((range.lowerBound + 2)..<(range.upperBound + 2)), consumed + 2) }
            return (event, consumed + 2)
        case .trailers(let size):
            return try parseTrailers(bytes, size: size)
        case .endPending:
            state = .head(scanned: 0)
            return (.end, 0)
        }
    }

    // MARK: Head

    private mutating func parseHead(_ bytes: UnsafeRawBufferPointer, scanned: Int) throws(HTTPRequestError) -> (event: Event, consumed: Int) {
        // RFC 9112 §2.2: ignore empty lines before the request line.
        var start = 0
        while start + 1 < bytes.count && bytes[start] == ASCII.cr && bytes[start + 1] == ASCII.lf { start += 2 }
        if start > 0 { return try continueAfterEmptyLines(bytes, skipped: start) }
        guard let end = try findHeadEnd(bytes, from: scanned) else { return (.needMoreBytes, 0) }
        let head = try parseHeadLines(UnsafeRawBufferPointer(rebasing: bytes[0...end]))
        trailers = nil
        switch head.framing {
        case .none:
            state = .endPending
        case .length(let length):
            state = length == 0 ? .endPending : .fixedBody(remaining: length)
        case .chunked:
            chunkedTotal = 0
            state = .chunkSize
        }
        return (.head(head), end + 1)
    }

    /// After leading empty lines: parses the rest and counts the skipped bytes as consumed.
    private mutating func continueAfterEmptyLines(_ bytes: UnsafeRawBufferPointer, skipped: Int) throws(HTTPRequestError) -> (event: Event, consumed: Int) {
        let (event, consumed) = try parseHead(UnsafeRawBufferPointer(rebasing: bytes[skipped...]), scanned: 0)
        return (event, consumed + skipped)
    }

    /// Finds the LF of the CRLFCRLF that ends the head, enforcing the line-ending rule and the size limits.
    private mutating func findHeadEnd(_ bytes: UnsafeRawBufferPointer, from scanned: Int) throws(HTTPRequestError) -> Int? {
        let count = bytes.count
        guard let base = bytes.baseAddress else { return nil }
        var index = scanned
        var sawLineEnd = scanned > 0  // the request line ended within the bytes already scanned
        while index < count {
            // The next LF, found by memchr; every byte before it is another byte of the line.
            let found = memchr(base + index, Int32(ASCII.lf), count - index)
            let lineFeed = found.map { base.distance(to: UnsafeRawPointer($0)) } ?? count
            // A limit is broken at the first byte past it, whatever follows: the error is the same whether
            // the bytes after it have arrived or not (a later bare LF does not turn it into another error).
            // Some byte in index..<lineFeed lies at or past the limit when the last of them does.
            let limit = sawLineEnd ? limits.maxHeadSize : limits.maxRequestLineLength
            if lineFeed > index && lineFeed - 1 >= limit {
                throw sawLineEnd ? .headTooLarge : .requestLineTooLong
            }
            guard lineFeed < count else { break }
            index = lineFeed
            guard index > 0 && bytes[index - 1] == ASCII.cr else { throw .invalidLineEnding }
            if !sawLineEnd {
                sawLineEnd = true
                if index + 1 > limits.maxRequestLineLength { throw .requestLineTooLong }
            }
            if index >= 3 && bytes[index - 2] == ASCII.lf {
                if index + 1 > limits.maxHeadSize { throw .headTooLarge }
                return index
            }
            index += 1
        }
        // Keep the request line's state simple: rescan from the start while it is incomplete.
        state = .head(scanned: sawLineEnd ? max(count - 1, 0) : 0)
        return nil
    }

    /// Parses a complete head: `bytes` ends with CRLFCRLF.
    private mutating func parseHeadLines(_ bytes: UnsafeRawBufferPointer) throws(HTTPRequestError) -> HTTPRequestHead {
        // Request line.
        let lineEnd = Self.lineFeed(in: bytes, from: 0)
        let requestLine = UnsafeRawBufferPointer(rebasing: bytes[0..<(lineEnd - 1)])
        let (method, target, queryStart, version) = try parseRequestLine(requestLine)

        // The field lines are checked here, all of them; their `HTTPFields` are built only if the request's
        // head is read (``HTTPParsedHead``).
        var framing = FramingFields()
        var fieldCount = 0
        var position = lineEnd + 1
        while true {
            let end = Self.lineFeed(in: bytes, from: position)
            if end == position + 1 { break }  // the empty line
            fieldCount += 1
            if fieldCount > limits.maxFieldCount { throw .tooManyFields }
            try scanFieldLine(UnsafeRawBufferPointer(rebasing: bytes[position..<(end - 1)]), framing: &framing)
            position = end + 1
        }

        let isHTTP11 = version.minor >= 1
        if isHTTP11 && framing.hostCount == 0 { throw .missingHost }
        if framing.hostCount > 1 { throw .multipleHosts }
        let bodyFraming: HTTPBodyFraming
        if framing.hasTransferEncoding {
            if framing.contentLength != nil { throw .transferEncodingWithContentLength }
            if !isHTTP11 { throw .transferEncodingInHTTP10 }
            if !framing.lastCodingIsChunked || framing.chunkedCount != 1 { throw .chunkedNotLast }
            if framing.otherCodings { throw .unsupportedTransferCoding }
            bodyFraming = .chunked
        } else if let length = framing.contentLength {
            if length > limits.maxBodySize { throw .bodyTooLarge }
            bodyFraming = length == 0 ? .none : .length(length)
        } else {
            bodyFraming = .none
        }
        let keepAlive = isHTTP11 ? !framing.connectionClose : (framing.connectionKeepAlive && !framing.connectionClose)
        if framing.hostCount == 1 && !framing.hostIsValid { throw .invalidHost }
        // Absolute form (RFC 9112 §3.2.2): the target's authority replaces Host, its path is routed.
        var targetAuthority: String?
        var path = target
        var scheme: String?
        var query: HTTPParsedHead.QueryMark = queryStart.map { .at($0) } ?? .none
        // The origin form ("/…", every ordinary request) is told from the first byte, without the string.
        if requestLine[targetStart(of: requestLine)] != UInt8(ascii: "/"),
           let (targetScheme, authority, targetPath) = Self.splitAbsoluteForm(target) {
            guard Self.isValidAuthority(authority.utf8) else { throw .invalidTarget }
            scheme = targetScheme
            targetAuthority = authority
            path = targetPath
            query = .unknown
        }
        // Checked once the head is known to be well formed (a malformed one gets its 400 first). HTTP/1.0
        // has no expectations: its `Expect` is ignored, as RFC 9110 §10.1.1 says of `100-continue`.
        if isHTTP11 && framing.unsupportedExpectation { throw .unsupportedExpectation }
        // The field lines without the empty line that ends the head (its last two bytes).
        let parsed = HTTPParsedHead.make(method: method, target: path, query: query, scheme: scheme, targetAuthority: targetAuthority,
                                         fieldLines: UnsafeRawBufferPointer(rebasing: bytes[(lineEnd + 1)..<(bytes.count - 2)]),
                                         reusing: &spareHead)
        return HTTPRequestHead(storage: parsed, version: version, keepAlive: keepAlive,
                               expectsContinue: isHTTP11 && framing.expectsContinue, framing: bodyFraming,
                               mayCarryRequestID: framing.carriesRequestID)
    }

    /// The index of the first LF at or after `start` in a head ``findHeadEnd(_:from:)`` found whole (so
    /// there is one), by `memchr`: a byte loop cost about four instructions a byte.
    @inline(__always)
    private static func lineFeed(in bytes: UnsafeRawBufferPointer, from start: Int) -> Int {
        let base = bytes.baseAddress!
        return base.distance(to: UnsafeRawPointer(memchr(base + start, Int32(ASCII.lf), bytes.count - start)!))
    }

    /// Where the target starts in a request line ``parseRequestLine(_:)`` accepted: after the method's space.
    @inline(__always)
    private func targetStart(of line: UnsafeRawBufferPointer) -> Int {
        let base = line.baseAddress!
        return base.distance(to: UnsafeRawPointer(memchr(base, Int32(ASCII.space), line.count)!)) + 1
    }

    /// The method, the target, where the target's query starts (its `?`, from the target's start; nil
    /// when it has none) and the version.
    private func parseRequestLine(_ line: UnsafeRawBufferPointer) throws(HTTPRequestError)
        -> (HTTPRequest.Method, String, Int?, HTTPVersion) {
        // method
        var index = 0
        while index < line.count && line[index] != ASCII.space {
            guard ASCII.isTokenCharacter(line[index]) else {
                if line[index] == ASCII.tab || line[index] < 0x20 || line[index] == 0x7F { throw .malformedRequestLine }
                throw .invalidMethod
            }
            index += 1
        }
        guard index > 0 else { throw index < line.count ? .invalidMethod : .malformedRequestLine }
        guard index < line.count else { throw .malformedRequestLine }
        let method = Self.method(UnsafeRawBufferPointer(rebasing: line[0..<index]))
        // target
        let targetStart = index + 1
        index = targetStart
        var queryStart: Int?
        while index < line.count && line[index] != ASCII.space {
            let byte = line[index]
            guard byte > 0x20 && byte < 0x7F else { throw .invalidTarget }
            if byte == UInt8(ascii: "?") && queryStart == nil { queryStart = index - targetStart }
            index += 1
        }
        guard index > targetStart else { throw .invalidTarget }
        guard index < line.count else { throw .malformedRequestLine }
        let target = String(decoding: UnsafeRawBufferPointer(rebasing: line[targetStart..<index]), as: UTF8.self)
        // version: exactly HTTP/D.D
        let versionStart = index + 1
        let version = UnsafeRawBufferPointer(rebasing: line[versionStart...])
        guard version.count == 8,
              version[0] == UInt8(ascii: "H"), version[1] == UInt8(ascii: "T"), version[2] == UInt8(ascii: "T"),
              version[3] == UInt8(ascii: "P"), version[4] == UInt8(ascii: "/"), ASCII.isDigit(version[5]),
              version[6] == UInt8(ascii: "."), ASCII.isDigit(version[7])
        else {
            if version.contains(ASCII.space) || version.isEmpty { throw .malformedRequestLine }
            throw .malformedVersion
        }
        let major = Int(version[5] &- UInt8(ascii: "0")), minor = Int(version[7] &- UInt8(ascii: "0"))
        guard major == 1 else { throw .unsupportedVersion(major: major, minor: minor) }
        // A higher 1.x minor is answered as 1.1 (RFC 9110 §6.2).
        return (method, target, queryStart, HTTPVersion(major: 1, minor: min(minor, 1)))
    }

    /// The fields that decide framing and connection handling, gathered while parsing the head.
    struct FramingFields {
        /// The last `Host` is `uri-host [ ":" port ]`.
        var hostIsValid = false
        var hostCount = 0
        var contentLength: Int?
        var hasTransferEncoding = false
        var lastCodingIsChunked = false
        var chunkedCount = 0
        var otherCodings = false
        var connectionClose = false
        var connectionKeepAlive = false
        var expectsContinue = false
        var unsupportedExpectation = false
        /// An `X-Request-ID` field was among them.
        var carriesRequestID = false
    }

    /// Checks one field line (RFC 9112 §5, RFC 9110 §5.5) and notes in `framing` what the fields that
    /// decide framing and connection handling say. Builds nothing.
    private func scanFieldLine(_ line: UnsafeRawBufferPointer, framing: inout FramingFields) throws(HTTPRequestError) {
        guard let first = line.first else { throw .invalidLineEnding }
        if first == ASCII.space || first == ASCII.tab { throw .obsoleteLineFolding }
        // The name: token characters up to the colon (a colon is not one).
        var colon = 0
        while colon < line.count, ASCII.isTokenCharacter(line[colon]) { colon += 1 }
        guard colon < line.count else { throw .missingColon }
        guard line[colon] == ASCII.colon, colon > 0 else { throw .invalidFieldName }
        let value = Self.trimmedValue(of: line, colon: colon)
        if ASCII.hasInvalidFieldValueByte(value) { throw .invalidFieldValue }

        switch KnownField.match(UnsafeRawBufferPointer(rebasing: line[0..<colon])) {
        case .host:
            framing.hostCount += 1
            framing.hostIsValid = Self.isValidAuthority(bytes: value.assumingMemoryBound(to: UInt8.self))
        case .contentLength:
            if framing.contentLength != nil { throw .multipleContentLengths }
            framing.contentLength = try Self.contentLength(value)
        case .transferEncoding:
            framing.hasTransferEncoding = true
            try Self.scanTransferCodings(value, into: &framing)
        case .connection:
            Self.scanConnectionOptions(value, into: &framing)
        case .expect:
            Self.scanExpectations(value, into: &framing)
        case .requestID:
            framing.carriesRequestID = true
        case .accept, .cookie, .origin, .userAgent, .contentType, .authorization, .cacheControl, .acceptEncoding, .acceptLanguage, .other:
            break
        }
    }

    /// Checks one field line (``scanFieldLine(_:framing:)``) and appends its field to `fields`.
    private func parseFieldLine(_ line: UnsafeRawBufferPointer, into fields: inout HTTPFields,
                                framing: inout FramingFields) throws(HTTPRequestError) {
        try scanFieldLine(line, framing: &framing)
        _ = Self.appendParsedField(line, to: &fields)
    }

    /// Appends the field of a line that ``scanFieldLine(_:framing:)`` accepted to `fields`; a `Host` line
    /// is not appended (it is carried as the authority) and its value is returned instead.
    static func appendParsedField(_ line: UnsafeRawBufferPointer, to fields: inout HTTPFields) -> String? {
        var colon = 0
        while line[colon] != ASCII.colon { colon += 1 }
        let value = trimmedValue(of: line, colon: colon)
        let nameBytes = UnsafeRawBufferPointer(rebasing: line[0..<colon])
        let known = KnownField.match(nameBytes)
        if case .host = known { return String(decoding: value, as: UTF8.self) }
        // Token characters only (checked when scanned): always a valid name.
        let name = known.name ?? HTTPField.Name(String(decoding: nameBytes, as: UTF8.self))!
        // ASCII without control characters (checked when scanned) is what `lenientValue:` would store, as a
        // string: made without the generic UTF-8 validation, which costs about a thousand instructions.
        var highBits: UInt8 = 0
        for byte in value { highBits |= byte }
        if highBits < 0x80 {
            fields.append(HTTPField(name: name, value: String(decoding: value, as: UTF8.self)))
        } else {
            fields.append(HTTPField(name: name, lenientValue: value))
        }
        return nil
    }

    /// The value of a field line whose colon is at `colon`, without the spaces and tabs around it.
    @inline(__always)
    private static func trimmedValue(of line: UnsafeRawBufferPointer, colon: Int) -> UnsafeRawBufferPointer {
        var valueStart = colon + 1, valueEnd = line.count
        while valueStart < valueEnd && (line[valueStart] == ASCII.space || line[valueStart] == ASCII.tab) { valueStart += 1 }
        while valueEnd > valueStart && (line[valueEnd - 1] == ASCII.space || line[valueEnd - 1] == ASCII.tab) { valueEnd -= 1 }
        return UnsafeRawBufferPointer(rebasing: line[valueStart..<valueEnd])
    }

    static func contentLength(_ value: UnsafeRawBufferPointer) throws(HTTPRequestError) -> Int {
        guard !value.isEmpty else { throw .invalidContentLength }
        var length = 0
        for byte in value {
            if byte == UInt8(ascii: ",") { throw .multipleContentLengths }
            guard ASCII.isDigit(byte) else { throw .invalidContentLength }
            let (times10, overflow1) = length.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times10.addingReportingOverflow(Int(byte - UInt8(ascii: "0")))
            guard !overflow1 && !overflow2 else { throw .invalidContentLength }
            length = sum
        }
        return length
    }

    /// Reads a `Transfer-Encoding` list: `coding *( OWS "," OWS coding )`, codings with optional parameters.
    static func scanTransferCodings(_ value: UnsafeRawBufferPointer, into framing: inout FramingFields) throws(HTTPRequestError) {
        var index = 0
        var sawCoding = false
        while index < value.count {
            while index < value.count && (value[index] == ASCII.space || value[index] == ASCII.tab || value[index] == UInt8(ascii: ",")) { index += 1 }
            guard index < value.count else { break }
            let start = index
            while index < value.count && ASCII.isTokenCharacter(value[index]) { index += 1 }
            guard index > start else { throw .chunkedNotLast }
            let coding = UnsafeRawBufferPointer(rebasing: value[start..<index])
            sawCoding = true
            if ASCII.equalsIgnoringCase(coding, "chunked") {
                framing.chunkedCount += 1
                framing.lastCodingIsChunked = true
            } else {
                if framing.chunkedCount > 0 { framing.chunkedCount += 1 }  // chunked was not last
                framing.lastCodingIsChunked = false
                framing.otherCodings = true
            }
            // skip parameters up to the next comma
            while index < value.count && value[index] != UInt8(ascii: ",") { index += 1 }
        }
        if !sawCoding { framing.lastCodingIsChunked = false }
    }

    static func scanConnectionOptions(_ value: UnsafeRawBufferPointer, into framing: inout FramingFields) {
        forEachListMember(of: value) { option in
            if ASCII.equalsIgnoringCase(option, "close") { framing.connectionClose = true }
            else if ASCII.equalsIgnoringCase(option, "keep-alive") { framing.connectionKeepAlive = true }
        }
    }

    /// Reads an `Expect` list (RFC 9110 §10.1.1): `100-continue`, in any case, is the one expectation
    /// known; any other member, or `100-continue` with anything attached, is unsupported. Empty members
    /// and the whitespace around members are skipped.
    static func scanExpectations(_ value: UnsafeRawBufferPointer, into framing: inout FramingFields) {
        forEachListMember(of: value) { member in
            if ASCII.equalsIgnoringCase(member, "100-continue") {
                framing.expectsContinue = true
            } else {
                framing.unsupportedExpectation = true
            }
        }
    }

    /// Calls `body` with each non-empty member of a comma-separated field value (RFC 9110 §5.6.1), the
    /// spaces and tabs around it trimmed.
    @inline(__always)
    static func forEachListMember(of value: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer) -> Void) {
        var index = 0
        while index < value.count {
            while index < value.count && (value[index] == ASCII.space || value[index] == ASCII.tab || value[index] == UInt8(ascii: ",")) { index += 1 }
            let start = index
            while index < value.count && value[index] != UInt8(ascii: ",") { index += 1 }
            var end = index
            while end > start && (value[end - 1] == ASCII.space || value[end - 1] == ASCII.tab) { end -= 1 }
            if end > start { body(UnsafeRawBufferPointer(rebasing: value[start..<end])) }
        }
    }

    static func method(_ bytes: UnsafeRawBufferPointer) -> HTTPRequest.Method {
        switch bytes.count {
        case 3:
            if ASCII.equals(bytes, "GET") { return .get }
            if ASCII.equals(bytes, "PUT") { return .put }
        case 4:
            if ASCII.equals(bytes, "POST") { return .post }
            if ASCII.equals(bytes, "HEAD") { return .head }
        case 6:
            if ASCII.equals(bytes, "DELETE") { return .delete }
        case 5:
            if ASCII.equals(bytes, "PATCH") { return .patch }
        case 7:
            if ASCII.equals(bytes, "OPTIONS") { return .options }
        default:
            break
        }
        // Token characters only (checked by the caller): always a valid method.
        return HTTPRequest.Method(String(decoding: bytes, as: UTF8.self))!
    }

    // MARK: Targets and authorities

    /// `scheme://authority/path?query` split into its scheme, authority and path-and-query ("/" when the
    /// path is empty); nil for any other form of target.
    static func splitAbsoluteForm(_ target: String) -> (String, String, String)? {
        // A scheme starts with a letter: the origin form ("/…", every ordinary request) and the asterisk
        // form are not absolute, found without a search. The search runs on bytes (a `Character` search
        // breaks grapheme clusters, thousands of instructions per request).
        guard let first = target.utf8.first, ASCII.isAlpha(first),
              let colon = target.utf8.firstIndex(of: UInt8(ascii: ":")), target.utf8[colon...].starts(with: "://".utf8)
        else { return nil }
        let separator = colon..<target.utf8.index(colon, offsetBy: 3)
        let scheme = target[..<separator.lowerBound]
        guard scheme.utf8.allSatisfy({ ASCII.isAlpha($0) || ASCII.isDigit($0) || $0 == UInt8(ascii: "+")
            || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: ".") }) else { return nil }
        let rest = target[separator.upperBound...]
        let pathStart = rest.utf8.firstIndex { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") } ?? rest.endIndex
        let pathAndQuery = rest[pathStart...]
        let path = pathAndQuery.utf8.first == UInt8(ascii: "?") || pathAndQuery.isEmpty ? "/" + pathAndQuery : String(pathAndQuery)
        return (String(scheme).lowercased(), String(rest[..<pathStart]), path)
    }

    /// Whether `value` is `uri-host [ ":" port ]` (RFC 3986 §3.2.2 and §3.2.3): an IPv6 address in brackets
    /// (no IPvFuture, no zone), or a registered name / IPv4 address of unreserved characters, `%XX` escapes
    /// and sub-delimiters, then an optional port of at most five digits. Empty is valid (an empty authority).
    static func isValidAuthority(_ value: String.UTF8View) -> Bool {
        if let valid = value.withContiguousStorageIfAvailable({ isValidAuthority(bytes: $0) }) { return valid }
        return Array(value).withUnsafeBufferPointer { isValidAuthority(bytes: $0) }
    }

    /// ``isValidAuthority(_:)`` on the value's bytes.
    static func isValidAuthority(bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        // One pass over a name or an IPv4 address with an optional port, the common case; anything else
        // (an IPv6 literal, a `%` escape, a second colon) goes the general way below.
        var index = 0
        while index < bytes.count, ASCII.isRegisteredNameCharacter(bytes[index]) { index += 1 }
        if index == bytes.count { return true }
        if bytes[index] == UInt8(ascii: ":") {
            let portStart = index + 1
            index = portStart
            while index < bytes.count, ASCII.isDigit(bytes[index]) { index += 1 }
            if index == bytes.count { return index - portStart <= 5 }
        }
        return isValidAuthorityInGeneral(bytes)
    }

    /// ``isValidAuthority(bytes:)`` for every form.
    private static func isValidAuthorityInGeneral(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        var portStart: Int?
        if bytes.first == UInt8(ascii: "[") {
            guard let close = bytes.firstIndex(of: UInt8(ascii: "]")), close > 1,
                  isIPv6Address(UnsafeBufferPointer(rebasing: bytes[1..<close]))
            else { return false }
            if close + 1 < bytes.count {
                guard bytes[close + 1] == UInt8(ascii: ":") else { return false }
                portStart = close + 2
            }
        } else {
            var hostEnd = bytes.count
            if let colon = bytes.lastIndex(of: UInt8(ascii: ":")) {
                portStart = colon + 1
                hostEnd = colon
            }
            var index = 0
            while index < hostEnd {
                if bytes[index] == UInt8(ascii: "%") {
                    // pct-encoded: "%" and two hex digits, never a bare "%".
                    guard index + 2 < hostEnd, ASCII.hexValue(bytes[index + 1]) != nil, ASCII.hexValue(bytes[index + 2]) != nil
                    else { return false }
                    index += 3
                    continue
                }
                guard ASCII.isRegisteredNameCharacter(bytes[index]) else { return false }
                index += 1
            }
        }
        guard let portStart else { return true }
        return bytes.count - portStart <= 5 && bytes[portStart...].allSatisfy(ASCII.isDigit)
    }

    /// Whether `bytes` is RFC 3986's `IPv6address`: eight groups of one to four hex digits separated by `:`,
    /// the last two of which may be an IPv4 address, or fewer with one `::` standing for the missing ones.
    static func isIPv6Address(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard bytes.count >= 2 && bytes.count <= 45 else { return false }
        // The one "::", if any, splits the address into the groups before it and the groups after it.
        var elision: Int?
        var index = 0
        while index + 1 < bytes.count {
            if bytes[index] == UInt8(ascii: ":") && bytes[index + 1] == UInt8(ascii: ":") {
                guard elision == nil else { return false }
                elision = index
                index += 2
                continue
            }
            index += 1
        }
        /// The groups of `part` (empty: none), an IPv4 address counting as two and allowed only last when
        /// `mayEndInIPv4`; nil when a group is malformed.
        func groups(_ part: Slice<UnsafeBufferPointer<UInt8>>, mayEndInIPv4: Bool) -> Int? {
            guard !part.isEmpty else { return 0 }
            var count = 0
            let pieces = part.split(separator: UInt8(ascii: ":"), omittingEmptySubsequences: false)
            for (position, piece) in pieces.enumerated() {
                if piece.count >= 1 && piece.count <= 4 && piece.allSatisfy({ ASCII.hexValue($0) != nil }) {
                    count += 1
                } else if mayEndInIPv4 && position == pieces.count - 1 && isIPv4Address(piece) {
                    count += 2
                } else {
                    return nil
                }
            }
            return count
        }
        if let elision {
            guard let before = groups(bytes[..<elision], mayEndInIPv4: false),
                  let after = groups(bytes[(elision + 2)...], mayEndInIPv4: true) else { return false }
            return before + after <= 7
        }
        return groups(bytes[...], mayEndInIPv4: true) == 8
    }

    /// Whether `bytes` is RFC 3986's `IPv4address`: four decimal octets (0-255, no leading zero) and dots.
    static func isIPv4Address(_ bytes: Slice<UnsafeBufferPointer<UInt8>>) -> Bool {
        let octets = bytes.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard octets.count == 4 else { return false }
        for octet in octets {
            guard octet.count >= 1 && octet.count <= 3, octet.allSatisfy(ASCII.isDigit),
                  octet.count == 1 || octet.first != UInt8(ascii: "0"),
                  octet.reduce(0, { $0 * 10 + Int($1 &- UInt8(ascii: "0")) }) <= 255 else { return false }
        }
        return true
    }

    // MARK: Chunked body

    private mutating func parseChunkSize(_ bytes: UnsafeRawBufferPointer) throws(HTTPRequestError) -> (event: Event, consumed: Int) {
        let searchEnd = min(bytes.count, limits.maxChunkSizeLineLength)
        var lf = 0
        while lf < searchEnd && bytes[lf] != ASCII.lf { lf += 1 }
        guard lf < searchEnd else {
            if bytes.count >= limits.maxChunkSizeLineLength { throw .invalidChunkSize }
            return (.needMoreBytes, 0)
        }
        guard lf > 0 && bytes[lf - 1] == ASCII.cr else { throw .invalidLineEnding }
        let line = UnsafeRawBufferPointer(rebasing: bytes[0..<(lf - 1)])
        var size = 0
        var index = 0
        while index < line.count, let digit = ASCII.hexValue(line[index]) {
            guard size <= (Int.max >> 4) else { throw .bodyTooLarge }
            size = size << 4 | digit
            index += 1
        }
        guard index > 0 else { throw .invalidChunkSize }
        // Optional chunk extensions: BWS ";" …, no control characters.
        while index < line.count && (line[index] == ASCII.space || line[index] == ASCII.tab) { index += 1 }
        if index < line.count {
            guard line[index] == UInt8(ascii: ";") else { throw .invalidChunkSize }
            for byte in line[index...] where byte < 0x20 && byte != ASCII.tab || byte == 0x7F { throw .invalidChunkSize }
        }
        if size == 0 {
            state = .trailers(size: 0)
            let (event, consumed) = try parseTrailers(UnsafeRawBufferPointer(rebasing: bytes[(lf + 1)...]), size: 0)
            return (event, consumed + lf + 1)
        }
        guard size <= limits.maxBodySize - chunkedTotal else { throw .bodyTooLarge }
        chunkedTotal += size
        state = .chunkData(remaining: size)
        guard lf + 1 < bytes.count else { return (.needMoreBytes, lf + 1) }
        let taken = min(size, bytes.count - lf - 1)
        state = taken == size ? .chunkDataEnd : .chunkData(remaining: size - taken)
        return (.body((lf + 1)..<(lf + 1 + taken)), lf + 1 + taken)
    }

    /// Reads the trailer fields (kept in ``trailers``) up to the empty line that ends the chunked body.
    private mutating func parseTrailers(_ bytes: UnsafeRawBufferPointer, size: Int) throws(HTTPRequestError) -> (event: Event, consumed: Int) {
        if size == 0 { trailers = nil }
        var position = 0
        var size = size
        while true {
            var lf = position
            while lf < bytes.count && bytes[lf] != ASCII.lf {
                // Over the limit at the first byte past it, as in the head, whatever follows.
                if size + (lf + 1 - position) > limits.maxHeadSize { throw .headTooLarge }
                lf += 1
            }
            guard lf < bytes.count else {
                state = .trailers(size: size)
                return (.needMoreBytes, position)
            }
            guard lf > position && bytes[lf - 1] == ASCII.cr else { throw .invalidLineEnding }
            size += lf + 1 - position
            if size > limits.maxHeadSize { throw .headTooLarge }
            if lf == position + 1 {
                state = .head(scanned: 0)
                return (.end, lf + 1)
            }
            var fields = trailers ?? HTTPFields()
            var framing = FramingFields()
            try parseFieldLine(UnsafeRawBufferPointer(rebasing: bytes[position..<(lf - 1)]),
                               into: &fields, framing: &framing)
            trailers = fields
            position = lf + 1
        }
    }
}
