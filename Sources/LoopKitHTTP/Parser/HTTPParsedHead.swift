#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import HTTPTypes
import Synchronization

/// A request head as the HTTP/1 parser left it: its method and target (what routing, logging and the
/// request id read) and its field lines as bytes, copied out of the connection's buffer. The
/// `HTTPRequest` is built from them on first access, once, and kept: a route that never reads the head's
/// fields (`GET /hello`) never pays for `HTTPFields`, the fields' strings or the request's pseudo-header
/// storage. The bytes were validated when parsed; building checks nothing again.
///
/// Heads and requests hold it by one reference (a copy of either retains one object). Read-only to all
/// but the parser, and the built request is kept under a `Mutex`: safe to read from any thread. An HTTP/1
/// connection's parser fills an ended request's head again for its next request
/// (``refill(method:target:scheme:targetAuthority:fieldLines:)``), only once nothing else references it, so a
/// keep-alive request allocates neither the object nor its field lines' array. Its properties skip the
/// runtime's exclusivity checks (`@exclusivity(unchecked)`): the writers are that refill and the
/// dispatcher, which gives the head its request's identity (``identify(id:startTime:)``, ``route``) before
/// any request is made of it.
///
/// The identity lives here, not in ``HTTPServerRequest``: a request then copies one reference for its head,
/// id, start and route, and holds no value of a resilient type (`ContinuousClock.Instant`), so the
/// compiler copies and destroys it inline instead of through its value witnesses.
final class HTTPParsedHead: @unchecked Sendable {  // changed only by refill and identify, while no request references it, on the loop's thread
    @exclusivity(unchecked) private(set) var method: HTTPRequest.Method
    /// The request target as routed: origin form as sent, or the path of an absolute-form target.
    @exclusivity(unchecked) private(set) var target: String
    /// Where ``target``'s query starts, as the parser saw it.
    @exclusivity(unchecked) private(set) var query: QueryMark
    /// The absolute-form target's scheme (nil for the origin form).
    @exclusivity(unchecked) private(set) var scheme: String?
    /// The absolute-form target's authority, which replaces `Host` (nil: `Host` is in the field lines); a
    /// built head's authority.
    @exclusivity(unchecked) private(set) var targetAuthority: String?
    /// The field lines, each ending in CRLF, without the request line and the empty line: bytes the head
    /// owns, `fieldLineCount` of them in room for `fieldLineCapacity`, kept between the requests it is
    /// filled for (a refill is one `memcpy`; an array's `removeAll` and `append` went through generic
    /// code of about 150 instructions).
    @exclusivity(unchecked) private var fieldLineBytes: UnsafeMutableRawPointer?
    @exclusivity(unchecked) private var fieldLineCount = 0
    @exclusivity(unchecked) private var fieldLineCapacity = 0
    private let built = Mutex<HTTPRequest?>(nil)
    /// The request's id as the client gave it (nil: the server made it, or none was given yet).
    @exclusivity(unchecked) private(set) var givenID: String?
    /// The number of a made id and the prefix of the generator that made it (nil: no id made): the id
    /// itself is written only where it is read.
    @exclusivity(unchecked) private(set) var madeID: UInt64 = 0
    @exclusivity(unchecked) private(set) var idPrefix: HTTPRequestIDGenerator.Prefix?
    /// When the request's head arrived (``HTTPServerRequest/startTime``).
    @exclusivity(unchecked) private(set) var startTime: ContinuousClock.Instant
    /// The pattern of the route that took the request (nil: none did, or not routed yet).
    @exclusivity(unchecked) var route: String?

    /// Where a target's query starts: noted by the parser as it checks the target's bytes, so that the path
    /// is cut without a second search.
    enum QueryMark {
        /// The target has no `?`.
        case none
        /// The `?` is this many UTF-8 bytes into the target.
        case at(Int)
        /// Not noted (a built head; an absolute-form target): searched for.
        case unknown
    }

    init(method: HTTPRequest.Method, target: String, query: QueryMark, scheme: String?, targetAuthority: String?,
         fieldLines: UnsafeRawBufferPointer) {
        self.method = method
        self.target = target
        self.query = query
        self.scheme = scheme
        self.targetAuthority = targetAuthority
        startTime = .now
        storeFieldLines(fieldLines)
    }

    deinit {
        fieldLineBytes?.deallocate()
    }

    /// Copies `lines` into the head's room for field lines, made larger when they do not fit.
    private func storeFieldLines(_ lines: UnsafeRawBufferPointer) {
        if lines.count > fieldLineCapacity {
            fieldLineBytes?.deallocate()
            fieldLineCapacity = Swift.max(lines.count, 256)
            fieldLineBytes = UnsafeMutableRawPointer.allocate(byteCount: fieldLineCapacity, alignment: 1)
        }
        if let source = lines.baseAddress, lines.count > 0 {
            fieldLineBytes!.copyMemory(from: source, byteCount: lines.count)
        }
        fieldLineCount = lines.count
    }

    /// A head of `fieldLines` (copied): `spare` filled again when it is given (an ended request's head
    /// that nothing else references), else a new one.
    static func make(method: HTTPRequest.Method, target: String, query: QueryMark, scheme: String?, targetAuthority: String?,
                     fieldLines: UnsafeRawBufferPointer, reusing spare: inout HTTPParsedHead?) -> HTTPParsedHead {
        guard let head = spare.take() else {
            return HTTPParsedHead(method: method, target: target, query: query, scheme: scheme, targetAuthority: targetAuthority,
                                  fieldLines: fieldLines)
        }
        head.method = method
        head.target = target
        head.query = query
        head.scheme = scheme
        head.targetAuthority = targetAuthority
        head.storeFieldLines(fieldLines)
        head.built.withLock { $0 = nil }
        return head
    }

    /// A head whose request is already built (an HTTP/2 stream's, or one a caller set), with the identity
    /// of `replaced` when it replaces a request's head.
    init(built request: HTTPRequest, replacing replaced: HTTPParsedHead? = nil) {
        method = request.method
        target = request.path ?? "/"
        query = .unknown
        scheme = request.scheme
        targetAuthority = request.authority
        built.withLock { $0 = request }
        givenID = replaced?.givenID
        madeID = replaced?.madeID ?? 0
        idPrefix = replaced?.idPrefix
        startTime = replaced?.startTime ?? .now
        route = replaced?.route
    }

    /// The request's id (``HTTPServerRequest/id``); empty until the dispatcher gives it one.
    var id: String {
        if let givenID { return givenID }
        return idPrefix?.id(madeID) ?? ""
    }

    /// Gives the head its request's id, the client's, and start (the dispatcher, when the head arrives),
    /// and forgets any route of an earlier request.
    func identify(id: String, startTime: ContinuousClock.Instant) {
        givenID = id
        self.startTime = startTime
        route = nil
    }

    /// Gives the head the id numbered `number` of the generator whose prefix is `prefix`, and its start.
    func identify(number: UInt64, prefix: HTTPRequestIDGenerator.Prefix, startTime: ContinuousClock.Instant) {
        if givenID != nil { givenID = nil }
        madeID = number
        if idPrefix !== prefix { idPrefix = prefix }  // a connection's heads keep their loop's: no retain
        self.startTime = startTime
        if route != nil { route = nil }
    }

    /// The target without its query: cut where the parser saw the `?`, searched for only when it did not.
    var path: Substring {
        switch query {
        case .none: Substring(target)
        case .at(let offset): target[..<target.utf8.index(target.utf8.startIndex, offsetBy: offset)]
        case .unknown: HTTPServerRequest.withoutQuery(target)
        }
    }

    /// The request: built on the first call, the same value after.
    var request: HTTPRequest {
        built.withLock { built in
            if let built { return built }
            let request = makeRequest()
            built = request
            return request
        }
    }

    /// Whether a field is named one of `names` (canonical, lowercase): read from the field lines' bytes
    /// while the request is not built, so that a handler that only needs to know that no such field came
    /// does not build it.
    func hasField(namedAnyOf names: HTTPFieldNames) -> Bool {
        if let built = built.withLock({ $0 }) { return names.names.contains { built.headerFields.contains($0) } }
        // Each stored line is `name:value\r\n` (the parser checked it): its end and its colon found with
        // memchr(3), and only a name of a length asked for compared (a third of the instructions of a
        // byte-by-byte walk for a short head).
        guard let base = fieldLineBytes.map({ UnsafeRawPointer($0) }) else { return false }
        let end = base + fieldLineCount
        var line = base
        while line < end {
            guard let lineEnd = memchr(line, Int32(ASCII.lf), end - line).map({ UnsafeRawPointer($0) }),
                  let colon = memchr(line, Int32(ASCII.colon), lineEnd - line).map({ UnsafeRawPointer($0) }) else { return false }
            let length = colon - line
            if names.mayHoldName(ofLength: length) {
                let name = UnsafeRawBufferPointer(start: line, count: length)
                for candidate in names.bytes where candidate.count == length {
                    let matches = candidate.elementsEqual(name) { lowercase, byte in
                        (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte | 0x20 : byte) == lowercase
                    }
                    if matches { return true }
                }
            }
            line = lineEnd + 1
        }
        return false
    }

    private func makeRequest() -> HTTPRequest {
        var fields = HTTPFields()
        var host: String?
        do {
            let bytes = UnsafeRawBufferPointer(start: fieldLineBytes, count: fieldLineCount)
            var position = 0
            while position < bytes.count {
                var end = position
                while bytes[end] != ASCII.lf { end += 1 }
                let line = UnsafeRawBufferPointer(rebasing: bytes[position..<(end - 1)])
                if let hostValue = HTTPRequestParser.appendParsedField(line, to: &fields) { host = hostValue }
                position = end + 1
            }
        }
        var request = HTTPRequest(method: method, scheme: scheme, authority: targetAuthority ?? host, path: target)
        request.headerFields = fields
        return request
    }
}

/// Field names asked for together (``HTTPParsedHead/hasField(namedAnyOf:)``), with their canonical names'
/// bytes made once. A plain value; safe from any thread.
struct HTTPFieldNames: Sendable {
    let names: [HTTPField.Name]
    let bytes: [[UInt8]]

    /// A bit for each name length below 64 (bit 63 for any longer).
    private let lengths: UInt64

    init(_ names: [HTTPField.Name]) {
        self.names = names
        bytes = names.map { Array($0.canonicalName.utf8) }
        lengths = bytes.reduce(0) { $0 | 1 << Swift.min(63, $1.count) }
    }

    /// Whether a name of `length` bytes may be among them (false: none is that long).
    @inline(__always)
    func mayHoldName(ofLength length: Int) -> Bool { lengths & (1 << Swift.min(63, length)) != 0 }
}
