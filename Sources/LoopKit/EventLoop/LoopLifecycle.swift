/// Where a loop is in its life, as a state machine whose transitions say what the loop must do (R10).
///
/// ```
///  open ──shutdown()──▶ closing ──the loop thread finishes──▶ finishing ──▶ closed
/// ```
///
/// Shutting down has two halves. The first happens wherever ``EventLoop/shutdown()`` is called: the
/// next-iteration queue is closed, so new work is refused from that moment. The second needs the loop's
/// thread: it runs what was queued before, then cancels timers and watches. The loop thread reaches a
/// *checkpoint* where it can do that at the end of every iteration (or attached drain), when
/// ``EventLoop/run()`` or ``EventLoop/runOnce(blocking:)`` is called, and when a ``LoopGroup`` thread leaves
/// its run loop; ``EventLoop/shutdown()`` called on the loop thread outside an iteration does it at once.
///
/// The transitions are pure: the loop applies the actions they return (``EventLoop/shutdown()``,
/// `EventLoop.reachCheckpoint(_:)`), so every path to the end of a loop's life reads in this file.
struct LoopLifecycle: Sendable, Equatable {
    /// The states, only ever moving forward.
    enum State: Sendable, Equatable {
        /// Accepting work.
        case open
        /// ``EventLoop/shutdown()`` was called: new work is refused; the loop thread has yet to run what
        /// was queued and cancel timers and watches.
        case closing
        /// The loop thread is running the final drain.
        case finishing
        /// Shut down: the queue is empty, timers and watches are cancelled, the loop cannot run again.
        case closed
    }

    private(set) var state: State = .open

    /// Where ``EventLoop/shutdown()`` was called from, which decides who finishes it.
    enum Caller: Sendable, Equatable {
        /// The loop's thread, with no iteration of the loop on the stack.
        case loopThreadOutsideIteration
        /// The loop's thread, inside one of the loop's callbacks.
        case loopThreadInsideIteration
        /// Any other thread.
        case anotherThread
    }

    /// What ``EventLoop/shutdown()`` must do.
    enum ShutdownAction: Sendable, Equatable {
        /// The loop was already shutting down or shut down: nothing.
        case none
        /// Close the queue, then finish now (this thread is the loop's and nothing of the loop is on the stack).
        case closeQueueAndFinish
        /// Close the queue; the iteration on the stack finishes at its end.
        case closeQueue
        /// Close the queue, stop ``EventLoop/run()`` and wake the loop, whose thread finishes.
        case closeQueueAndWakeLoop
    }

    /// `shutdown()` was called.
    mutating func shutdownRequested(by caller: Caller) -> ShutdownAction {
        guard state == .open else { return .none }
        switch caller {
        case .loopThreadOutsideIteration:
            state = .finishing
            return .closeQueueAndFinish
        case .loopThreadInsideIteration:
            state = .closing
            return .closeQueue
        case .anotherThread:
            state = .closing
            return .closeQueueAndWakeLoop
        }
    }

    /// The checkpoints where the loop thread can finish a shutdown.
    enum Checkpoint: Sendable, Equatable {
        /// ``EventLoop/run()`` or ``EventLoop/runOnce(blocking:)`` was called.
        case driveRequested
        /// An iteration (or an attached loop's drain) ended.
        case iterationEnded
        /// ``EventLoop/run()`` is returning, or a ``LoopGroup`` thread left its run loop.
        case runEnded
    }

    /// What the loop thread must do at a checkpoint.
    enum CheckpointAction: Sendable, Equatable {
        /// Go on: the loop is open (or the final drain is already running further up the stack).
        case proceed
        /// Run the queued work, cancel timers and watches, then ``finished()``; a drive request then
        /// returns without running an iteration.
        case finish
        /// The loop is shut down: a drive request is refused with ``EventLoopError/shutDown``.
        case refuse
    }

    /// The loop thread reached `checkpoint`.
    mutating func reached(_ checkpoint: Checkpoint) -> CheckpointAction {
        switch state {
        case .open, .finishing:
            return .proceed
        case .closing:
            state = .finishing
            return .finish
        case .closed:
            return checkpoint == .driveRequested ? .refuse : .proceed
        }
    }

    /// The final drain ran and timers and watches are cancelled.
    mutating func finished() {
        precondition(state == .finishing, "LoopKit: a loop finished shutting down from state \(state)")
        state = .closed
    }

    /// Whether the loop still accepts work.
    var isOpen: Bool { state == .open }

    /// Whether the loop has shut down completely.
    var isClosed: Bool { state == .closed }
}
