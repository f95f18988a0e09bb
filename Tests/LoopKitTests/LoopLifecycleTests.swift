@testable import LoopKit
import Testing

/// The lifecycle state machine's transitions and the actions they return (R10), tested directly.
@Suite("LoopLifecycle")
struct LoopLifecycleTests {
    @Test("a new loop is open and every checkpoint proceeds")
    func startsOpen() {
        var lifecycle = LoopLifecycle()
        #expect(lifecycle.isOpen)
        #expect(lifecycle.reached(.driveRequested) == .proceed)
        #expect(lifecycle.reached(.iterationEnded) == .proceed)
        #expect(lifecycle.reached(.runEnded) == .proceed)
        #expect(lifecycle.state == .open)
    }

    @Test("shutdown on the loop thread outside an iteration closes the queue and finishes at once")
    func shutdownOutsideAnIterationFinishesNow() {
        var lifecycle = LoopLifecycle()
        #expect(lifecycle.shutdownRequested(by: .loopThreadOutsideIteration) == .closeQueueAndFinish)
        #expect(lifecycle.state == .finishing)
        lifecycle.finished()
        #expect(lifecycle.isClosed)
    }

    @Test("shutdown inside an iteration closes the queue and leaves the finish to the iteration's end")
    func shutdownInsideAnIterationFinishesAtItsEnd() {
        var lifecycle = LoopLifecycle()
        #expect(lifecycle.shutdownRequested(by: .loopThreadInsideIteration) == .closeQueue)
        #expect(lifecycle.state == .closing)
        #expect(lifecycle.reached(.iterationEnded) == .finish)
        #expect(lifecycle.state == .finishing)
    }

    @Test("shutdown from another thread closes the queue and wakes the loop, whose next checkpoint finishes")
    func shutdownFromAnotherThreadWakesTheLoop() {
        var lifecycle = LoopLifecycle()
        #expect(lifecycle.shutdownRequested(by: .anotherThread) == .closeQueueAndWakeLoop)
        #expect(!lifecycle.isOpen)
        #expect(lifecycle.reached(.driveRequested) == .finish)
        lifecycle.finished()
        #expect(lifecycle.isClosed)
    }

    @Test("only the first shutdown acts; later ones return no action")
    func shutdownTwiceDoesNothing() {
        var lifecycle = LoopLifecycle()
        _ = lifecycle.shutdownRequested(by: .anotherThread)
        #expect(lifecycle.shutdownRequested(by: .anotherThread) == .none)
        #expect(lifecycle.shutdownRequested(by: .loopThreadOutsideIteration) == .none)
        _ = lifecycle.reached(.runEnded)
        lifecycle.finished()
        #expect(lifecycle.shutdownRequested(by: .loopThreadInsideIteration) == .none)
    }

    @Test("a checkpoint reached during the final drain proceeds: the finish is not started twice")
    func checkpointsDuringTheFinishProceed() {
        var lifecycle = LoopLifecycle()
        _ = lifecycle.shutdownRequested(by: .loopThreadOutsideIteration)
        #expect(lifecycle.reached(.iterationEnded) == .proceed)
        #expect(lifecycle.reached(.driveRequested) == .proceed)
        #expect(lifecycle.state == .finishing)
    }

    @Test("once closed, driving the loop is refused and other checkpoints proceed")
    func closedRefusesToBeDriven() {
        var lifecycle = LoopLifecycle()
        _ = lifecycle.shutdownRequested(by: .loopThreadOutsideIteration)
        lifecycle.finished()
        #expect(lifecycle.reached(.driveRequested) == .refuse)
        #expect(lifecycle.reached(.iterationEnded) == .proceed)
        #expect(lifecycle.reached(.runEnded) == .proceed)
    }

    @Test("finishing from a state other than finishing is a programmer error")
    func finishingOutOfOrderTraps() async {
        await #expect(processExitsWith: .failure) {
            var lifecycle = LoopLifecycle()
            lifecycle.finished()
        }
    }
}
