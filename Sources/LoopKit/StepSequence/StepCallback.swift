import Synchronization

/// The completion a callback step calls once when its work is done, and the cancellation it can observe.
///
/// ```swift
/// .thenCallback("download") { url, done in
///     client.get(url) { data, error in
///         if let data { done.succeed(data) } else { done.fail(error!) }
///     }
/// }
/// ```
/// Completing twice does not crash: the second completion is ignored and reported through the
/// sequence's ``StepSequence/onDiagnostic(_:)`` handler. Safe from any thread.
public struct StepCallback<Value: Sendable>: Sendable {
    let core: CallbackCore

    /// Finishes the step with `value`.
    public func succeed(_ value: Value) { core.complete(.success(value)) }

    /// Fails the step with `error` (retried if the step's policy allows).
    public func fail(_ error: any Error) { core.complete(.failure(error)) }

    /// Finishes the step with `result`.
    public func complete(_ result: Result<Value, any Error>) { core.complete(result.map { $0 }) }

    /// Whether the sequence was cancelled (or the step timed out); the step should stop early.
    public var isCancelled: Bool { core.isCancelled }

    /// Calls `handler` once if the sequence is cancelled or the step times out (at once if it already was).
    public func onCancel(_ handler: @escaping @Sendable () -> Void) { core.onCancel(handler) }
}

extension StepCallback where Value == Void {
    /// Finishes a step that produces nothing.
    public func succeed() { succeed(()) }
}

/// The shared state behind a callback step's ``StepCallback``.
final class CallbackCore: Sendable {
    private struct State {
        var completed = false
        var cancelled = false
        var cancelHandlers: [@Sendable () -> Void] = []
    }

    private let state = Lock(State())
    private let deliver: @Sendable (Result<any Sendable, any Error>) -> Void
    private let reportDuplicate: @Sendable () -> Void

    init(deliver: @escaping @Sendable (Result<any Sendable, any Error>) -> Void,
         reportDuplicate: @escaping @Sendable () -> Void) {
        self.deliver = deliver
        self.reportDuplicate = reportDuplicate
    }

    func complete(_ result: Result<any Sendable, any Error>) {
        let first = state.withLock { state -> Bool in
            defer { state.completed = true }
            return !state.completed
        }
        if first { deliver(result) } else { reportDuplicate() }
    }

    var isCancelled: Bool { state.withLock { $0.cancelled } }

    func onCancel(_ handler: @escaping @Sendable () -> Void) {
        let runNow = state.withLock { state -> Bool in
            if state.cancelled { return true }
            state.cancelHandlers.append(handler)
            return false
        }
        if runNow { handler() }
    }

    func cancel() {
        let handlers = state.withLock { state -> [@Sendable () -> Void] in
            guard !state.cancelled else { return [] }
            state.cancelled = true
            defer { state.cancelHandlers = [] }
            return state.cancelHandlers
        }
        for handler in handlers { handler() }
    }
}
