/// The per-thread stack of frames made current by `becomeCurrent(withPendingUnitCount:)`.
///
/// Only its own thread touches it, so it needs no lock. It lives in LoopKit's one thread-local slot type
/// (``ThreadLocal``), which releases it when the thread exits.
final class ThreadProgressFrames {
    var frames: [CurrentFrame] = []

    private static let slot = ThreadLocal<ThreadProgressFrames>(retaining: true)

    /// The calling thread's stack, if it has one.
    static var existing: ThreadProgressFrames? { slot.value }

    /// The calling thread's stack, created on first use.
    static var forCurrentThread: ThreadProgressFrames {
        if let frames = existing { return frames }
        let frames = ThreadProgressFrames()
        slot.set(retained: frames)
        return frames
    }
}
