/// Work that ``EventLoop/offload(to:_:completion:)`` handed to a ``WorkPool``: a handle to cancel it.
///
/// Safe from any thread.
public final class OffloadedWork: Sendable {
    let item: WorkItem
    let core: WorkPoolCore

    init(item: WorkItem, core: WorkPoolCore) {
        self.item = item
        self.core = core
    }

    /// Cancels the work if no thread has taken it yet: it never runs, and its completion runs on the loop
    /// with `CancellationError`, in a later drain (never inside this call). Work that has started runs to
    /// its end and completes normally. Cancelling twice does nothing.
    ///
    /// - Returns: True when this call cancelled the work; false when it had started, ended or was
    ///   cancelled before.
    ///
    /// Safe from any thread. The corresponding libuv call is `uv_cancel`.
    @discardableResult
    public func cancel() -> Bool {
        core.cancel(item, reason: CancellationError())
    }
}
