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
/// runtime's exclusivity checks (`@exclusivity(unchecked)`): the one writer is that refill.
final class HTTPParsedHead: @unchecked Sendable {  // changed only by refill, while uniquely referenced, on the parser's thread
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
    /// The field lines, each ending in CRLF, without the request line and the empty line.
    @exclusivity(unchecked) private(set) var fieldLines: [UInt8]
    private let built = Mutex<HTTPRequest?>(nil)

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

    init(method: HTTPRequest.Method, target: String, query: QueryMark, scheme: String?, targetAuthority: String?, fieldLines: [UInt8]) {
        self.method = method
        self.target = target
        self.query = query
        self.scheme = scheme
        self.targetAuthority = targetAuthority
        self.fieldLines = fieldLines
    }

    /// A head of `fieldLines` (copied): `spare` filled again when it is given (an ended request's head
    /// that nothing else references), else a new one.
    static func make(method: HTTPRequest.Method, target: String, query: QueryMark, scheme: String?, targetAuthority: String?,
                     fieldLines: UnsafeRawBufferPointer, reusing spare: inout HTTPParsedHead?) -> HTTPParsedHead {
        guard let head = spare.take() else {
            return HTTPParsedHead(method: method, target: target, query: query, scheme: scheme, targetAuthority: targetAuthority,
                                  fieldLines: Array(fieldLines))
        }
        head.method = method
        head.target = target
        head.query = query
        head.scheme = scheme
        head.targetAuthority = targetAuthority
        head.fieldLines.removeAll(keepingCapacity: true)
        head.fieldLines.append(contentsOf: fieldLines)
        head.built.withLock { $0 = nil }
        return head
    }

    /// A head whose request is already built (an HTTP/2 stream's, or one a caller set).
    init(built request: HTTPRequest) {
        method = request.method
        target = request.path ?? "/"
        query = .unknown
        scheme = request.scheme
        targetAuthority = request.authority
        fieldLines = []
        built.withLock { $0 = request }
    }

    /// The target without its query: cut where the parser saw the `?`, searched for only when it did not.
    var path: Substring {
        switch query {
        case .none: target[...]
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
        return fieldLines.withUnsafeBytes { bytes in
            var position = 0
            while position < bytes.count {
                var colon = position
                while colon < bytes.count, bytes[colon] != UInt8(ascii: ":"), bytes[colon] != ASCII.lf { colon += 1 }
                let name = UnsafeRawBufferPointer(rebasing: bytes[position..<colon])
                for candidate in names.bytes where candidate.count == name.count {
                    let matches = candidate.elementsEqual(name) { lowercase, byte in
                        (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte | 0x20 : byte) == lowercase
                    }
                    if matches { return true }
                }
                var end = colon
                while end < bytes.count, bytes[end] != ASCII.lf { end += 1 }
                position = end + 1
            }
            return false
        }
    }

    private func makeRequest() -> HTTPRequest {
        var fields = HTTPFields()
        var host: String?
        fieldLines.withUnsafeBytes { bytes in
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

    init(_ names: [HTTPField.Name]) {
        self.names = names
        bytes = names.map { Array($0.canonicalName.utf8) }
    }
}
