import HTTPTypes
import LoopKitNet

/// Request decompression as middleware: a collected request body with `Content-Encoding` gzip, `br` or
/// `zstd` is decoded before the handler sees it, within ``HTTPDecompressionLimits``. Opt-in: add it to
/// the routes that take compressed bodies (a group), not to the whole router.
///
/// ```swift
/// router.group("/ingest") { ingest in
///     ingest.use(DecompressionMiddleware(limits: HTTPDecompressionLimits(maxSize: 32 << 20)))
///     ingest.post("/events") { request in .text("\(request.body.count) bytes decoded") }
/// }
/// ```
///
/// The handler gets the decoded body, without `Content-Encoding` and with the decoded `Content-Length`.
/// A coding other than those gets 415 with `Accept-Encoding: gzip, br, zstd`; a body that decodes past
/// a limit gets 413 (decoding stops there: nothing past the limit is kept); data that does not decode,
/// or is cut short, 400. It is inline middleware: a synchronous route behind it stays inline.
///
/// A streaming route's body is not collected (the middleware sees it empty and leaves it alone): read
/// it decoded with ``HTTPRequestBody/decompressed(for:limits:)``.
///
/// Safe from any thread; its methods run on the connection's loop thread.
public struct DecompressionMiddleware: HTTPMiddleware {
    /// How far a body may expand.
    public var limits: HTTPDecompressionLimits

    /// Decompression within `limits`.
    ///
    /// - Parameter limits: How far a body may expand (default 8 MiB, 100 to 1).
    public init(limits: HTTPDecompressionLimits = HTTPDecompressionLimits()) {
        self.limits = limits
    }

    /// Decodes the request's body when it has a `Content-Encoding`.
    ///
    /// - Parameter request: The request; its body and fields are replaced by the decoded ones.
    /// - Returns: nil (the request goes on).
    /// - Throws: ``HTTPError`` 415, 413 or 400 (see above).
    ///
    /// Called on the connection's loop thread.
    public func handleRequest(_ request: inout HTTPServerRequest) throws -> HTTPServerResponse? {
        guard !request.body.isEmpty,
              let decompressor = try HTTPBodyDecompressor.make(contentEncoding: request.head.headerFields[.contentEncoding],
                                                               limits: limits) else { return nil }
        var output: [Bytes] = []
        try request.body.withUnsafeBytes { raw throws(HTTPError) in try decompressor.decode(raw, into: &output) }
        try decompressor.finish()
        request.body = Bytes(joining: output)
        request.head.headerFields[.contentEncoding] = nil
        request.head.headerFields[.contentLength] = String(request.body.count)
        return nil
    }
}
