import HTTPTypes
import LoopKitNet

extension HTTPRequestBody {
    /// The body decoded by its `Content-Encoding` (gzip, `br` or `zstd`) as it arrives, within
    /// `limits`: a streaming route's opt-in request decompression.
    ///
    /// ```swift
    /// router.on(.post, "/ingest", bodyLimit: nil) { request, body in
    ///     var lines = 0
    ///     for try await chunk in try body.decompressed(for: request) { lines += chunk.count(where: { $0 == 0x0A }) }
    ///     return .text("\(lines) lines")
    /// }
    /// ```
    /// A body without `Content-Encoding` (or `identity`) is read as it is. Each compressed chunk is
    /// decoded when it is read, so the decoded bytes held are one chunk's; the route's own limit
    /// (`bodyLimit`) counts the compressed bytes.
    ///
    /// - Parameters:
    ///   - request: The request (its `Content-Encoding`).
    ///   - limits: How far the body may expand.
    /// - Returns: The decoded body, an `AsyncSequence` of `Bytes`.
    /// - Throws: ``HTTPError`` 415 (with `Accept-Encoding`) for a coding other than gzip, `br` and `zstd`.
    ///   Reading the sequence throws ``HTTPError`` 413 past a limit (nothing more is read) and 400 for
    ///   data that does not decode or is cut short, and the ``HTTPBodyError``s of the body: a handler
    ///   that lets them propagate gets those statuses sent.
    ///
    /// Call on the connection's loop thread (from the handler's task), as every read of the body.
    public func decompressed(for request: HTTPServerRequest,
                             limits: HTTPDecompressionLimits = HTTPDecompressionLimits()) throws(HTTPError) -> HTTPDecompressedBody {
        HTTPDecompressedBody(body: self, decompressor: try HTTPBodyDecompressor.make(
            contentEncoding: request.head.headerFields[.contentEncoding], limits: limits))
    }
}

/// A streamed request body decoded as it is read (``HTTPRequestBody/decompressed(for:limits:)``).
///
/// **Thread rule**: loop-confined, as the ``HTTPRequestBody`` it reads: iterate it on the connection's
/// loop. It is `Sendable` so the handler's task can hold it; the unchecked conformance stands for that rule.
public final class HTTPDecompressedBody: AsyncSequence, @unchecked Sendable {  // loop-confined, as HTTPRequestBody
    public typealias Element = Bytes

    private let body: HTTPRequestBody
    /// nil: the body is not encoded.
    private let decompressor: HTTPBodyDecompressor?

    init(body: HTTPRequestBody, decompressor: HTTPBodyDecompressor?) {
        self.body = body
        self.decompressor = decompressor
    }

    /// Makes the iterator; one consumer at a time. Call on the loop's thread.
    public func makeAsyncIterator() -> Iterator { Iterator(source: self) }

    /// Reads the next decoded chunk.
    public struct Iterator: AsyncIteratorProtocol {
        public typealias Element = Bytes

        let source: HTTPDecompressedBody
        private var pending: [Bytes] = []
        private var pendingHead = 0
        private var ended = false

        init(source: HTTPDecompressedBody) { self.source = source }

        /// The next decoded chunk, or nil once the body and its compressed stream have ended. Call on
        /// the loop's thread.
        ///
        /// - Throws: ``HTTPError`` 413 or 400, or an ``HTTPBodyError``.
        public mutating func next() async throws -> Bytes? {
            while true {
                if pendingHead < pending.count {
                    defer { pendingHead += 1 }
                    return pending[pendingHead]
                }
                guard !ended else { return nil }
                guard let chunk = try await source.body.next() else {
                    ended = true
                    try source.decompressor?.finish()
                    return nil
                }
                guard let decompressor = source.decompressor else { return chunk }
                pending.removeAll(keepingCapacity: true)
                pendingHead = 0
                do {
                    try chunk.withUnsafeBytes { raw throws(HTTPError) in try decompressor.decode(raw, into: &pending) }
                } catch {
                    ended = true
                    throw error
                }
            }
        }
    }
}
