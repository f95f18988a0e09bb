import HTTPTypes
import LoopKitNet

/// Response compression as middleware: gzip, Brotli (`br`) or Zstandard (`zstd`), chosen by the
/// request's `Accept-Encoding` quality values (``HTTPAcceptEncoding``), for bodies of a listed content
/// type and at least a minimum size.
///
/// ```swift
/// router.use(CompressionMiddleware())   // zstd, br, gzip; text, JSON, JavaScript, XML, SVG; 1 KiB and up
/// ```
///
/// It is inline middleware (``HTTPMiddleware``): a synchronous route behind it stays inline. A body of
/// bytes is compressed at once, on the way out, on the loop thread; a streamed body (a file,
/// ``HTTPResponseBody/stream(_:)``, an event stream) is compressed as it is written, each write flushed,
/// so that every write (every server-sent event) reaches the client as soon as it is written, and the
/// memory a stream holds is the coder's state and a 16 KiB buffer.
///
/// A compressed response gets `Content-Encoding`, loses any `Content-Length` (a body of bytes gets the
/// compressed length; a stream is sent chunked on HTTP/1.1), and its `ETag` becomes weak (`W/"…"`: the
/// bytes differ from the identity's, the representation does not, so `If-None-Match` still matches).
/// Every response it could compress gets `Vary: Accept-Encoding`, compressed or not, so a cache keeps
/// them apart. It leaves alone: `HEAD` requests, 1xx, 204, 206 (a range is of the identity's bytes) and
/// 304, a response that has a `Content-Encoding` already (a precompressed file), one with
/// `Cache-Control: no-transform`, one without a listed `Content-Type`, and a body known to be smaller
/// than ``minimumSize``. A request whose `Accept-Encoding` accepts none of ``codings`` gets the identity
/// (never 406: the middleware does not refuse what the route answered).
///
/// Safe from any thread; its methods run on the connection's loop thread.
public struct CompressionMiddleware: HTTPMiddleware {
    /// The codings offered, best first: the order breaks ties between equal quality values (default
    /// zstd, br, gzip).
    public var codings: [HTTPContentCoding]
    /// Bodies known to be smaller are sent as they are (default 1 KiB): a streamed body of unknown
    /// length is compressed.
    public var minimumSize: Int
    /// The content types compressed: an entry ending in `/` matches that top-level type (`text/`), one
    /// starting with `+` a structured-syntax suffix (`+json`), any other the media type exactly
    /// (`application/json`); parameters (`; charset=utf-8`) are ignored, case does not matter.
    public var contentTypes: [String] {
        didSet { listed = Self.listed(contentTypes) }
    }
    /// ``contentTypes``' entries as lowercased bytes, with how each matches.
    private var listed: [(bytes: [UInt8], match: Match)]
    private enum Match { case topLevel, suffix, exactly }
    /// The level of each coding.
    public var levels: HTTPCompressionLevels

    /// The content types compressed by default: text, JSON, JavaScript, XML, SVG, WebAssembly and the
    /// `+json` and `+xml` suffixes. Images, audio, video and archives are compressed already.
    public static let defaultContentTypes = [
        "text/", "application/json", "application/javascript", "application/xml", "application/wasm",
        "image/svg+xml", "application/x-ndjson", "+json", "+xml",
    ]

    /// Compression with these rules; every one has a default.
    ///
    /// - Parameters:
    ///   - codings: The codings offered, best first (``HTTPContentCoding/gzip``, ``HTTPContentCoding/brotli``
    ///     and ``HTTPContentCoding/zstd`` are implemented; others are never chosen).
    ///   - minimumSize: The smallest body compressed.
    ///   - contentTypes: The content types compressed.
    ///   - levels: The level of each coding.
    public init(codings: [HTTPContentCoding] = [.zstd, .brotli, .gzip], minimumSize: Int = 1024,
                contentTypes: [String] = CompressionMiddleware.defaultContentTypes,
                levels: HTTPCompressionLevels = HTTPCompressionLevels()) {
        self.codings = codings.filter(\.isEncodable)
        self.minimumSize = minimumSize
        self.contentTypes = contentTypes.map { $0.lowercased() }
        self.listed = Self.listed(self.contentTypes)
        self.levels = levels
    }

    private static func listed(_ contentTypes: [String]) -> [(bytes: [UInt8], match: Match)] {
        contentTypes.map { entry in
            let bytes = Array(entry.lowercased().utf8)
            return (bytes, bytes.last == UInt8(ascii: "/") ? .topLevel : bytes.first == UInt8(ascii: "+") ? .suffix : .exactly)
        }
    }

    /// Compresses the response when the rules above allow it and the client accepts a coding.
    ///
    /// - Parameters:
    ///   - response: The response.
    ///   - request: The request (its method and `Accept-Encoding`).
    ///
    /// Called on the connection's loop thread.
    public func handleResponse(_ response: inout HTTPServerResponse, for request: HTTPServerRequest) {
        guard isCompressible(response, for: request) else { return }
        Self.addVary(to: &response.headerFields)
        guard case .coding(let coding) = HTTPAcceptEncoding(request.head.headerFields[.acceptEncoding]).preferred(among: codings),
              coding.isEncodable else { return }
        let levels = levels
        var fields = response.headerFields
        fields[.contentEncoding] = coding.token
        fields[.contentLength] = nil
        if let tag = fields[.eTag], !tag.hasPrefix("W/") { fields[.eTag] = "W/" + tag }
        response.headerFields = fields
        switch response.body.storage {
        case .bytes(let bytes):
            guard let encoder = coding.makeEncoder(levels: levels) else { return }
            var output: [Bytes] = []
            bytes.withUnsafeBytes { encoder.encode($0, flush: false, into: &output) }
            encoder.finish(into: &output)
            response.body = .bytes(Bytes(joining: output))
        case .stream(let write, let watchesClient):
            response.body = HTTPResponseBody(storage: .stream({ writer in
                // The coder is made in the task that uses it (a coder is not `Sendable`).
                guard let encoder = coding.makeEncoder(levels: levels) else { return try await write(writer) }
                let encoding = HTTPBodyWriter(encodingInto: writer, with: encoder)
                try await write(encoding)
                try await encoding.finishEncoding()
            }, watchesClient: watchesClient))
        }
    }

    /// Whether `response` is one this middleware compresses for a client that accepts a coding.
    ///
    /// It runs for every response behind the middleware, so it reads the fields in place, and the type
    /// (which turns most uncompressible responses away) first: a field read through `HTTPFields`'
    /// subscript joins its values into a new string, and `lowercased().contains(_:)` builds a searcher,
    /// which cost a 1 KiB file's request 40k of its 83k instructions (`make bench-files-callgrind`).
    func isCompressible(_ response: HTTPServerResponse, for request: HTTPServerRequest) -> Bool {
        guard request.method != .head else { return false }  // read without building the request's head
        let status = response.status.code
        guard status >= 200, status != 204, status != 206, status != 304 else { return false }
        let fields = response.headerFields
        var listed = false
        for field in fields where field.name == .contentType {
            guard !listed else { return false }  // two types: not one this can tell
            listed = isListed(field.value)
            guard listed else { return false }
        }
        guard listed, !fields.contains(.contentEncoding) else { return false }
        for field in fields where field.name == .cacheControl {
            if Self.contains(field.value.utf8, Self.noTransform) { return false }
        }
        switch response.body.storage {
        case .bytes(let bytes):
            return bytes.count >= minimumSize
        case .stream:
            guard let length = fields[.contentLength].flatMap({ Int($0) }) else { return true }
            return length >= minimumSize
        }
    }

    /// Whether the media type of `contentType` is one of ``contentTypes`` (compared byte by byte, ASCII
    /// letters without case; the entries are lowercased).
    func isListed(_ contentType: String) -> Bool {
        var contentType = contentType
        return contentType.withUTF8 { bytes in
            var start = 0, end = bytes.count
            for index in 0..<bytes.count where bytes[index] == UInt8(ascii: ";") {
                end = index
                break
            }
            while start < end, bytes[start] == UInt8(ascii: " ") || bytes[start] == UInt8(ascii: "\t") { start += 1 }
            while end > start, bytes[end - 1] == UInt8(ascii: " ") || bytes[end - 1] == UInt8(ascii: "\t") { end -= 1 }
            let media = UnsafeBufferPointer(rebasing: bytes[start..<end])
            for (entry, match) in listed {
                let count = entry.count
                switch match {
                case .topLevel: if media.count >= count, Self.equalsLowercased(media.prefix(count), entry) { return true }
                case .suffix: if media.count >= count, Self.equalsLowercased(media.suffix(count), entry) { return true }
                case .exactly: if media.count == count, Self.equalsLowercased(media, entry) { return true }
                }
            }
            return false
        }
    }

    private static let noTransform = Array("no-transform".utf8)

    /// Whether `bytes`, ASCII letters without case, equal `lowercased`.
    private static func equalsLowercased(_ bytes: some Collection<UInt8>, _ lowercased: some Collection<UInt8>) -> Bool {
        bytes.elementsEqual(lowercased) { byte, other in
            (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte | 0x20 : byte) == other
        }
    }

    /// Whether `bytes` hold `lowercased` (ASCII letters without case) anywhere.
    private static func contains(_ bytes: String.UTF8View, _ lowercased: [UInt8]) -> Bool {
        var start = bytes.startIndex
        var remaining = bytes.count
        while remaining >= lowercased.count {
            if equalsLowercased(bytes[start...].prefix(lowercased.count), lowercased) { return true }
            start = bytes.index(after: start)
            remaining -= 1
        }
        return false
    }

    /// `Vary: Accept-Encoding`, unless the response varies on it (or on everything) already.
    private static func addVary(to fields: inout HTTPFields) {
        guard fields.contains(.vary) else {
            fields.append(HTTPField(name: .vary, value: "Accept-Encoding"))
            return
        }
        let listed = fields[values: .vary].flatMap { $0.split(separator: ",").map { $0.trimmingSpaces().lowercased() } }
        guard !listed.contains("accept-encoding"), !listed.contains("*") else { return }
        fields.append(HTTPField(name: .vary, value: "Accept-Encoding"))
    }
}
