import LoopKitNet

/// A request body for ``HTTPClient``: bytes at hand, or a sequence read as the transfer sends.
///
/// A plain value; safe from any thread.
public struct HTTPClientRequestBody: Sendable {
    enum Source: Sendable {
        case bytes(Bytes)
        case stream(length: Int?, makeIterator: @Sendable () -> any RequestBodyIterator)
    }

    let source: Source

    /// The body `bytes` (sent with a `Content-Length`; resent as is when a redirect or retry needs it).
    public static func bytes(_ bytes: Bytes) -> HTTPClientRequestBody { HTTPClientRequestBody(source: .bytes(bytes)) }

    /// A body read from `sequence` as the transfer sends it: one chunk is taken at a time, when the previous
    /// one was sent (the sequence is the backpressure). With `length` it goes out with a `Content-Length`,
    /// else chunked (HTTP/1.1) or in DATA frames (HTTP/2). A streamed body is read once: a redirect that
    /// must resend it (307, 308) fails the request.
    public static func stream<S: AsyncSequence & Sendable>(_ sequence: S, length: Int? = nil) -> HTTPClientRequestBody
    where S.Element == Bytes {
        HTTPClientRequestBody(source: .stream(length: length, makeIterator: { SequenceIterator(iterator: sequence.makeAsyncIterator()) }))
    }

    var knownLength: Int? {
        switch source {
        case .bytes(let bytes): bytes.count
        case .stream(let length, _): length
        }
    }
}

/// A request body's sequence behind one type-erased `next()`.
protocol RequestBodyIterator {
    mutating func next() async throws -> Bytes?
}

private struct SequenceIterator<Base: AsyncIteratorProtocol>: RequestBodyIterator where Base.Element == Bytes {
    var iterator: Base
    mutating func next() async throws -> Bytes? { try await iterator.next() }
}
