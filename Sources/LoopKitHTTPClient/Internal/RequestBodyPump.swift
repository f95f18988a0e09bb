import LoopKitNet
import LoopKit

/// A streamed request body between the task that reads its sequence and the transfer (the loop thread,
/// inside curl's read callback): one chunk in flight at a time.
final class RequestBodyPump: Sendable {
    private struct State {
        var pending: Bytes?
        var isEnded = false
        var failure: String?
        /// The reading task waits for the pending chunk to be taken.
        var writer: CheckedContinuation<Void, Never>?
        /// curl was told to pause; the next chunk (or the end) resumes it.
        var consumerPaused = false
        var isCancelled = false
    }

    private let state = Lock(State())
    /// Resumes the paused transfer (queued onto the loop). Set before the pump is shared.
    private let resumeConsumer: @Sendable () -> Void

    init(resumeConsumer: @escaping @Sendable () -> Void) { self.resumeConsumer = resumeConsumer }

    /// The reading task: pulls the body's chunks until the end, one at a time.
    func pump(_ makeIterator: @Sendable () -> any RequestBodyIterator) async {
        var iterator = makeIterator()
        do {
            while let chunk = try await iterator.next() {
                guard !chunk.isEmpty else { continue }
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    let resume: Bool? = state.withLock { state in
                        if state.isCancelled { return nil }
                        state.pending = chunk
                        state.writer = continuation
                        defer { state.consumerPaused = false }
                        return state.consumerPaused
                    }
                    switch resume {
                    case nil: continuation.resume()
                    case true?: resumeConsumer()
                    case false?: break
                    }
                }
                if state.withLock({ $0.isCancelled }) { return }
            }
            end(failure: nil)
        } catch {
            end(failure: "\(error)")
        }
    }

    private func end(failure: String?) {
        let resume = state.withLock { state in
            state.isEnded = true
            state.failure = failure
            defer { state.consumerPaused = false }
            return state.consumerPaused
        }
        if resume { resumeConsumer() }
    }

    /// The transfer: copies what is pending into `buffer`.
    func read(into buffer: UnsafeMutableRawBufferPointer) -> CurlReadAnswer {
        let (answer, writer): (CurlReadAnswer, CheckedContinuation<Void, Never>?) = state.withLock { state in
            if let pending = state.pending {
                let count = min(pending.count, buffer.count)
                pending.withUnsafeBytes { source in
                    buffer.baseAddress!.copyMemory(from: source.baseAddress!, byteCount: count)
                }
                if count == pending.count {
                    state.pending = nil
                    defer { state.writer = nil }
                    return (.wrote(count), state.writer)
                }
                state.pending = pending.dropFirst(count)
                return (.wrote(count), nil)
            }
            if state.isEnded { return (state.failure == nil ? .wrote(0) : .abort, nil) }
            state.consumerPaused = true
            return (.pause, nil)
        }
        writer?.resume()
        return answer
    }

    /// The sequence's error, when it threw.
    var failure: String? { state.withLock { $0.failure } }

    /// The transfer ended: the reading task stops at its next chunk.
    func cancel() {
        let writer = state.withLock { state in
            state.isCancelled = true
            defer { state.writer = nil }
            return state.writer
        }
        writer?.resume()
    }
}
