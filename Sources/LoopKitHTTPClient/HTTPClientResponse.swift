import HTTPTypes
import LoopKitNet

/// A response from ``HTTPClient``: its head, and its body still arriving.
///
/// A plain value; safe from any thread. The body is read once.
public struct HTTPClientResponse: Sendable {
    /// The status and header fields (of the last response when redirects were followed). With
    /// ``HTTPClient/Configuration/Decompression/enabled(maximumSize:maximumRatio:)`` the body is decoded
    /// but `Content-Encoding` and `Content-Length` still describe it as sent.
    public let head: HTTPResponse
    /// The HTTP version the response came in: 10, 11 or 20.
    public let httpVersion: Int
    /// The body, as it arrives.
    public let body: Body

    /// Creates a response (for tests of code that calls the client).
    public init(head: HTTPResponse, httpVersion: Int = 11, body: Body) {
        self.head = head
        self.httpVersion = httpVersion
        self.body = body
    }

    /// The body read to its end, at most `limit` bytes.
    ///
    /// - Throws: ``HTTPClientError/Kind/responseTooLarge`` past `limit`; what ended the transfer.
    ///
    /// Safe from any task.
    public func collect(upTo limit: Int) async throws(HTTPClientError) -> Bytes {
        try await body.collect(upTo: limit)
    }
}

extension HTTPClientResponse {
    /// A response body: an `AsyncSequence` of ``Bytes`` chunks, in order, with backpressure — while the
    /// reader is more than the client's ``HTTPClient/Configuration/bodyHighWaterMark`` behind, the transfer
    /// pauses (the server's sends then wait on TCP or HTTP/2 flow control).
    ///
    /// Read it once, from one task. Dropping the body unread cancels the transfer and frees its connection.
    /// An iteration throws ``HTTPClientError`` when the transfer fails after the head arrived.
    public struct Body: AsyncSequence, Sendable {
        public typealias Element = Bytes
        public typealias Failure = HTTPClientError

        let reader: ResponseBodyReader

        init(reader: ResponseBodyReader) { self.reader = reader }

        /// A body of `bytes`, already complete (for tests of code that calls the client).
        public init(bytes: Bytes) {
            let stream = ResponseBodyStream(highWaterMark: .max, lowWaterMark: 0, onResume: {})
            if !bytes.isEmpty { _ = stream.offer(bytes) }  // taken: the mark is .max
            stream.finish(nil)
            reader = ResponseBodyReader(stream: stream, cancel: {})
        }

        public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(reader: reader) }

        /// Reads the body's chunks in order.
        public struct AsyncIterator: AsyncIteratorProtocol {
            let reader: ResponseBodyReader

            public mutating func next() async throws(HTTPClientError) -> Bytes? { try await reader.stream.next() }

            public mutating func next(isolation actor: isolated (any Actor)?) async throws(HTTPClientError) -> Bytes? {
                try await reader.stream.next()
            }
        }

        /// The body read to its end, at most `limit` bytes.
        ///
        /// - Throws: ``HTTPClientError/Kind/responseTooLarge`` past `limit` (the transfer is cancelled);
        ///   what ended the transfer.
        public func collect(upTo limit: Int) async throws(HTTPClientError) -> Bytes {
            var parts: [Bytes] = []
            var total = 0
            var iterator = makeAsyncIterator()
            while let chunk = try await iterator.next() {
                total += chunk.count
                guard total <= limit else {
                    reader.cancel()
                    throw HTTPClientError(.responseTooLarge, "the response body is larger than \(limit) bytes")
                }
                parts.append(chunk)
            }
            return Bytes(joining: parts)
        }
    }
}

/// What keeps a response body's transfer: the last copy of the body dropped cancels it (a body left unread
/// would otherwise hold its connection, paused, until the deadline).
final class ResponseBodyReader: Sendable {
    let stream: ResponseBodyStream
    private let cancelTransfer: @Sendable () -> Void

    init(stream: ResponseBodyStream, cancel: @escaping @Sendable () -> Void) {
        self.stream = stream
        cancelTransfer = cancel
    }

    func cancel() { if !stream.isFinished { cancelTransfer() } }

    deinit { cancel() }
}
