import HTTPTypes
import LoopKit
import LoopKitNet

/// A request body read as it arrives: an `AsyncSequence` of `Bytes` chunks with backpressure, a
/// callback form, and ``collect(upTo:)``.
///
/// Handed to the handler of a streaming route (`router.on(_:_:bodyLimit:_:)`, ``HTTPHandler/streaming(limit:_:)``)
/// as soon as the request head is parsed, before any body byte is read. **Backpressure**: the server
/// parses the body only while fewer than ``bufferLimit`` bytes wait here unconsumed (so at most that
/// plus one read, 64 KiB, are buffered); past that the socket is not read (the client's sends then
/// block in its kernel) until the handler takes a chunk.
/// **`Expect: 100-continue`** is answered when the handler starts reading (the first `next()`,
/// ``read(_:onEnd:)`` or ``collect(upTo:)``), or when it starts a streamed response
/// (``HTTPResponseBody/stream(_:)``) while the body is unread, whichever comes first: always before the
/// final head. A handler that answers with bytes without reading refuses the body, and the connection
/// closes after that response. **Limits**: a route's limit, when it has one, ends the body with
/// ``HTTPBodyError/tooLarge(limit:)`` past it, and the server answers 413.
///
/// A handler that answers before the whole body has arrived ends the connection after its response
/// (`Connection: close`, then the server reads and drops what the client still sends until it closes:
/// RFC 9112 §9.3's "close", done so the response is not lost to a reset).
///
/// **Thread rule**: loop-confined. Read it on the connection's loop: from the handler's task (which
/// runs on the loop) or its callbacks. It is `Sendable` so that task can hold it; the unchecked
/// conformance stands for that rule.
public final class HTTPRequestBody: AsyncSequence, @unchecked Sendable {  // loop-confined: every entry point checks the thread
    public typealias Element = Bytes
    public typealias Failure = HTTPBodyError

    /// Bytes the server buffers here before it stops reading the socket (64 KiB).
    public let bufferLimit = 64 * 1024

    let loop: EventLoop
    /// The most bytes the body may have; nil for no limit.
    let limit: Int?
    /// The codec reading it, an HTTP/1 connection or an HTTP/2 stream (nil once the body has ended, or
    /// the connection has gone).
    private weak var connection: (any HTTPRequestBodySource)?
    private var chunks: [Bytes] = []
    private var chunkHead = 0
    /// Bytes buffered, not yet taken by the handler.
    private(set) var bufferedCount = 0
    /// Bytes received in all.
    private(set) var receivedCount = 0
    private var ending: Result<HTTPFields?, HTTPBodyError>?
    /// The async consumer, while it waits for a chunk.
    private var waiter = SingleConsumerWaiter<Bytes, HTTPBodyError>()
    private var chunkHandler: ((Bytes) -> Void)?
    private var endHandler: ((Result<HTTPFields?, HTTPBodyError>) -> Void)?
    /// The handler has started reading (what `Expect: 100-continue` waits for).
    private(set) var isReading = false

    init(connection: some HTTPRequestBodySource, loop: EventLoop, limit: Int?) {
        self.connection = connection
        self.loop = loop
        self.limit = limit
    }

    // MARK: Reading

    /// The trailer fields of a chunked body, once the body has ended (nil before, and for a body without
    /// trailers). Call on the loop's thread.
    public var trailers: HTTPFields? {
        precondition(loop.isCurrent, "HTTPRequestBody.trailers read off its loop's thread")
        if case .success(let trailers)? = ending { return trailers }
        return nil
    }

    /// Whether the whole body has arrived (or failed). Call on the loop's thread.
    public var isComplete: Bool {
        precondition(loop.isCurrent, "HTTPRequestBody.isComplete read off its loop's thread")
        return ending != nil
    }

    /// Makes the iterator; one consumer at a time. Call on the loop's thread.
    public func makeAsyncIterator() -> Iterator { Iterator(body: self) }

    /// Reads the next chunk of the body.
    public struct Iterator: AsyncIteratorProtocol {
        public typealias Element = Bytes
        public typealias Failure = HTTPBodyError

        let body: HTTPRequestBody

        /// The next chunk, or nil once the body has ended. Call on the loop's thread.
        /// - Throws: ``HTTPBodyError`` when the body is cut short or passes the route's limit.
        public mutating func next() async throws(HTTPBodyError) -> Bytes? {
            try await body.next()
        }

        /// The next chunk, or nil once the body has ended. Call on the loop's thread.
        /// - Throws: ``HTTPBodyError`` when the body is cut short or passes the route's limit.
        public mutating func next(isolation actor: isolated (any Actor)?) async throws(HTTPBodyError) -> Bytes? {
            try await body.next()
        }
    }

    /// Reads the body with callbacks: `onChunk` with each chunk as it arrives (and first with what is
    /// buffered already), then `onEnd` once, with the trailers or the error. No backpressure beyond the
    /// socket's own: the chunks are handed over as fast as they arrive.
    ///
    /// - Parameters:
    ///   - onChunk: Called on the loop's thread with each chunk.
    ///   - onEnd: Called once on the loop's thread when the body ends: `.success(trailers)` or the error.
    ///
    /// Call on the loop's thread, once per body.
    public func read(_ onChunk: @escaping (Bytes) -> Void, onEnd: @escaping (Result<HTTPFields?, HTTPBodyError>) -> Void) {
        precondition(loop.isCurrent, "HTTPRequestBody.read(_:onEnd:) called off its loop's thread")
        precondition(chunkHandler == nil && !waiter.isWaiting, "HTTPRequestBody is read by one consumer at a time")
        chunkHandler = onChunk
        endHandler = onEnd
        startReading()
        while let chunk = takeChunk() { onChunk(chunk) }
        if let ending { finishCallbacks(ending) }
    }

    /// Collects the whole body, up to `limit` bytes, into one ``Bytes``: a body that arrived as one chunk
    /// is that chunk (no copy), a longer one is copied once into storage of its exact size.
    ///
    /// - Parameter limit: The most bytes to accept.
    /// - Returns: The body.
    /// - Throws: ``HTTPBodyError/tooLarge(limit:)`` past `limit` (a handler that lets it propagate gets
    ///   413 sent for it); other ``HTTPBodyError``s when the body is cut short.
    ///
    /// Call on the loop's thread (from the handler's task).
    public func collect(upTo limit: Int) async throws(HTTPBodyError) -> Bytes {
        var parts: [Bytes] = []
        var count = 0
        for try await chunk in self {
            guard count + chunk.count <= limit else {
                refuse(.tooLarge(limit: limit))
                throw .tooLarge(limit: limit)
            }
            parts.append(chunk)
            count += chunk.count
        }
        return Bytes(joining: parts)
    }

    func next() async throws(HTTPBodyError) -> Bytes? {
        precondition(loop.isCurrent, "HTTPRequestBody read off its loop's thread")
        startReading()
        return try await SingleConsumerWaiter.next(readyNow: { readyNow() }) { continuation in
            precondition(chunkHandler == nil, "HTTPRequestBody is read by one consumer at a time")
            waiter.park(continuation, for: "HTTPRequestBody")
        }
    }

    /// What the async consumer gets without waiting: a chunk, the end or the error; nil when it must wait.
    private func readyNow() -> Result<Bytes?, HTTPBodyError>? {
        if let chunk = takeChunk() { return .success(chunk) }
        if let ending { return ending.map { _ in nil } }
        return nil
    }

    // MARK: From the connection (loop thread)

    /// Whether the connection may parse more body into this buffer.
    var hasRoom: Bool { bufferedCount < bufferLimit || chunkHandler != nil }

    /// Body bytes arrived (copied out of the connection's read buffer).
    func append(_ bytes: UnsafeRawBufferPointer) {
        guard ending == nil, !bytes.isEmpty else { return }
        receivedCount += bytes.count
        if let limit, receivedCount > limit {
            end(.failure(.tooLarge(limit: limit)))
            return
        }
        let chunk = Bytes(copying: bytes)
        if let consumer = waiter.unpark() {
            consumer.resume(returning: chunk)
        } else if let chunkHandler {
            chunkHandler(chunk)
        } else {
            chunks.append(chunk)
            bufferedCount += chunk.count
        }
    }

    /// The body ended: completely (with its trailers), or cut short.
    func end(_ result: Result<HTTPFields?, HTTPBodyError>) {
        guard ending == nil else { return }
        ending = result
        connection = nil
        if bufferedCount == 0 { waiter.unpark()?.resume(with: result.map { _ in nil }) }
        if chunkHandler != nil { finishCallbacks(result) }
    }

    // MARK: Internals

    private func startReading() {
        guard !isReading else { return }
        isReading = true
        connection?.bodyReadingStarted()
    }

    private func takeChunk() -> Bytes? {
        guard chunkHead < chunks.count else { return nil }
        let chunk = chunks[chunkHead]
        chunks[chunkHead] = Bytes()
        chunkHead += 1
        if chunkHead == chunks.count {
            chunks.removeAll(keepingCapacity: true)
            chunkHead = 0
        }
        let wasFull = !hasRoom
        bufferedCount -= chunk.count
        if wasFull, hasRoom { connection?.bodyHasRoom() }
        return chunk
    }

    private func finishCallbacks(_ result: Result<HTTPFields?, HTTPBodyError>) {
        let handler = endHandler
        endHandler = nil
        chunkHandler = nil
        handler?(result)
    }

    /// The handler refuses the rest of the body (past its own limit): nothing more is buffered.
    private func refuse(_ error: HTTPBodyError) {
        end(.failure(error))
        chunks = []
        chunkHead = 0
        bufferedCount = 0
    }
}

/// Why a streamed request body ended early.
public enum HTTPBodyError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The body passed the route's limit, or the limit given to ``HTTPRequestBody/collect(upTo:)``:
    /// the server answers 413 (if no response was sent yet) and closes the connection.
    case tooLarge(limit: Int)
    /// The client closed the connection (or it failed, or timed out) before the body ended.
    case connectionClosed
    /// The body broke HTTP/1.1's framing (a bad chunk, say): the server answered the error and closed.
    case malformed(HTTPRequestError)

    /// A sentence for logs.
    public var description: String {
        switch self {
        case .tooLarge(let limit): "the request body is larger than \(limit) bytes"
        case .connectionClosed: "the connection closed before the request body ended"
        case .malformed(let error): "malformed request body: \(error)"
        }
    }
}

/// What reads a streamed request body for its ``HTTPRequestBody``: the HTTP/1 connection, or an HTTP/2
/// stream. Loop thread.
protocol HTTPRequestBodySource: AnyObject {
    /// The handler started reading: answer `Expect: 100-continue` now, unless a final head went first.
    func bodyReadingStarted()
    /// The handler took buffered bytes below the buffer's limit: read more (HTTP/2: open the window).
    func bodyHasRoom()
}
