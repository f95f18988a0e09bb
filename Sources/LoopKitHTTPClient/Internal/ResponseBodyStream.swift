import DequeModule
import LoopKitNet
import LoopKit

/// The bytes between a transfer (the loop thread, inside curl's write callback) and the body's one reader
/// (any task), with the high/low water marks that pause and resume the transfer.
/// Locks are LoopKit's `Lock` (a `Mutex` the thread sanitizer can see).
final class ResponseBodyStream: Sendable {
    private struct State {
        var chunks = Deque<Bytes>()
        var buffered = 0
        /// Set once the transfer ended: nil for success.
        var end: HTTPClientError??
        var reader: CheckedContinuation<Bytes?, any Error>?
        /// The producer was told to pause and waits for ``resumeProducer``.
        var producerPaused = false
        /// The reader's task was cancelled: what it reads from now on is this error.
        var readerCancelled = false
    }

    private let state = Lock(State())
    let highWaterMark: Int
    let lowWaterMark: Int
    /// Called (off the lock, from the reader's task) when the buffer drains below the low water mark after
    /// the producer paused. A `let`: a closure kept in a `Lock` gained two reabstraction thunks each time it
    /// was read through `withLock`'s `inout`, so the n-th resume of a long download ran through 2n thunks
    /// (a tenth of a 256 MiB download's CPU time in `perf`).
    private let resumeProducer: @Sendable () -> Void

    init(highWaterMark: Int, lowWaterMark: Int, onResume: @escaping @Sendable () -> Void) {
        // At least one byte buffered before a pause: a paused producer always leaves the reader a chunk.
        self.highWaterMark = max(1, highWaterMark)
        self.lowWaterMark = min(max(0, lowWaterMark), self.highWaterMark - 1)
        resumeProducer = onResume
    }

    var isFinished: Bool { state.withLock { $0.end != nil } }

    /// What ``offer(_:)`` did with the bytes.
    enum Offered {
        /// Taken, below the high water mark.
        case taken
        /// Taken, and the buffer reached the high water mark: the producer pauses now (without holding
        /// bytes back), and `onResume` is called once the reader drains the buffer to the low water mark.
        case takenAtHighWater
        /// Refused: the buffer was at the high water mark already. The producer pauses and offers the bytes
        /// again after `onResume`.
        case refused
    }

    /// Producer: hands over `bytes` unless the buffer is at its high water mark.
    func offer(_ bytes: Bytes) -> Offered {
        enum Outcome { case handToReader(CheckedContinuation<Bytes?, any Error>), offered(Offered) }
        let outcome: Outcome = state.withLock { state in
            if let reader = state.reader {
                state.reader = nil
                return .handToReader(reader)
            }
            guard state.buffered < highWaterMark else {
                state.producerPaused = true
                return .offered(.refused)
            }
            state.chunks.append(bytes)
            state.buffered += bytes.count
            guard state.buffered >= highWaterMark else { return .offered(.taken) }
            state.producerPaused = true
            return .offered(.takenAtHighWater)
        }
        switch outcome {
        case .handToReader(let reader):
            reader.resume(returning: bytes)
            return .taken
        case .offered(let offered):
            return offered
        }
    }

    /// Producer: the transfer ended, with `error` or (nil) the body complete. Only the first call counts.
    func finish(_ error: HTTPClientError?) {
        let reader: CheckedContinuation<Bytes?, any Error>? = state.withLock { state in
            guard state.end == nil else { return nil }
            state.end = .some(error)
            defer { state.reader = nil }
            return state.reader
        }
        if let error { reader?.resume(throwing: error) } else { reader?.resume(returning: nil) }
    }

    /// Reader: the next chunk, nil at the end.
    func next() async throws(HTTPClientError) -> Bytes? {
        // A chunk or the end already here is taken without a continuation or a cancellation handler (a
        // small response's body is whole before its head is awaited). A cancelled task takes the slow path,
        // whose handler reports the cancellation.
        if !Task.isCancelled {
            enum Ready { case chunk(Bytes, resume: Bool), end(HTTPClientError?), notYet }
            let ready: Ready = state.withLock { state in
                if state.readerCancelled { return .notYet }
                if let chunk = state.chunks.popFirst() {
                    state.buffered -= chunk.count
                    let resume = state.producerPaused && state.buffered <= lowWaterMark
                    if resume { state.producerPaused = false }
                    return .chunk(chunk, resume: resume)
                }
                if let end = state.end { return .end(end) }
                return .notYet
            }
            switch ready {
            case .chunk(let chunk, let resume):
                if resume { resumeProducer() }
                return chunk
            case .end(let error):
                if let error { throw error }
                return nil
            case .notYet:
                break
            }
        }
        do {
            return try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Bytes?, any Error>) in
                    enum Step { case chunk(Bytes, resume: Bool), end(HTTPClientError?), wait }
                    let step: Step = state.withLock { state in
                        if state.readerCancelled { return .end(HTTPClientError(.cancelled, "the task reading the response body was cancelled")) }
                        if let chunk = state.chunks.popFirst() {
                            state.buffered -= chunk.count
                            let resume = state.producerPaused && state.buffered <= lowWaterMark
                            if resume { state.producerPaused = false }
                            return .chunk(chunk, resume: resume)
                        }
                        if let end = state.end { return .end(end) }
                        state.reader = continuation
                        return .wait
                    }
                    switch step {
                    case .chunk(let chunk, let resume):
                        if resume { resumeProducer() }
                        continuation.resume(returning: chunk)
                    case .end(let error):
                        if let error { continuation.resume(throwing: error) } else { continuation.resume(returning: nil) }
                    case .wait:
                        break
                    }
                }
            } onCancel: {
                let reader: CheckedContinuation<Bytes?, any Error>? = state.withLock { state in
                    state.readerCancelled = true
                    defer { state.reader = nil }
                    return state.reader
                }
                reader?.resume(throwing: HTTPClientError(.cancelled, "the task reading the response body was cancelled"))
            }
        } catch let error as HTTPClientError {
            throw error
        } catch {
            throw HTTPClientError(.cancelled, "\(error)")
        }
    }
}
