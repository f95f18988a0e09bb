@testable import LoopKit
import Testing

@Suite struct TaskProgressCancellationTests {
    /// A root with a child and a grandchild.
    private func family() -> (TaskProgress, TaskProgress, TaskProgress) {
        let root = TaskProgress.discrete(totalUnitCount: 2)
        let child = TaskProgress.discrete(totalUnitCount: 2)
        let grandchild = TaskProgress.discrete(totalUnitCount: 2)
        root.addChild(child, withPendingUnitCount: 1)
        child.addChild(grandchild, withPendingUnitCount: 1)
        return (root, child, grandchild)
    }

    @Test func cancelCascadesToDescendants() {
        let (root, child, grandchild) = family()
        root.cancel()
        #expect(root.isCancelled && child.isCancelled && grandchild.isCancelled)
    }

    @Test func cancelDoesNotReachAncestors() {
        let (root, child, grandchild) = family()
        child.cancel()
        #expect(!root.isCancelled)
        #expect(grandchild.isCancelled)
    }

    @Test func childAddedToCancelledParentIsCancelled() {
        let parent = TaskProgress.discrete(totalUnitCount: 2)
        parent.cancel()
        let late = parent.withCurrent(pendingUnitCount: 1) { TaskProgress(totalUnitCount: 1) }
        #expect(late.isCancelled)
    }

    @Test func cancellationHandlerRunsOnce() {
        let (root, child, _) = family()
        let runs = RunCounter()
        child.cancellationHandler = { runs.bump() }
        root.cancel()
        child.cancel()
        root.cancel()
        #expect(runs.count == 1)
    }

    @Test func cancellationHandlerSetAfterCancelRunsAtOnceAndOnlyOnce() {
        let progress = TaskProgress.discrete(totalUnitCount: 1)
        progress.cancel()
        let runs = RunCounter()
        progress.cancellationHandler = { runs.bump() }
        #expect(runs.count == 1)
        progress.cancellationHandler = { runs.bump() }
        progress.cancel()
        #expect(runs.count == 1)
    }

    @Test func pauseAndResumeCascadeAndRunHandlersOncePerTransition() {
        let (root, child, grandchild) = family()
        let pauses = RunCounter()
        let resumes = RunCounter()
        grandchild.pausingHandler = { pauses.bump() }
        grandchild.resumingHandler = { resumes.bump() }
        root.pause()
        root.pause()
        #expect(root.isPaused && child.isPaused && grandchild.isPaused)
        #expect(pauses.count == 1)
        root.resume()
        root.resume()
        #expect(!root.isPaused && !child.isPaused && !grandchild.isPaused)
        #expect(resumes.count == 1)
        root.pause()
        #expect(pauses.count == 2)
    }

    @Test func childAddedToPausedParentIsPaused() {
        let parent = TaskProgress.discrete(totalUnitCount: 2)
        parent.pause()
        let child = TaskProgress.discrete(totalUnitCount: 1)
        parent.addChild(child, withPendingUnitCount: 1)
        #expect(child.isPaused)
        parent.resume()
        #expect(!child.isPaused)
    }

    @Test func cancelledProgressDoesNotPause() {
        let progress = TaskProgress.discrete(totalUnitCount: 1)
        let pauses = RunCounter()
        progress.pausingHandler = { pauses.bump() }
        progress.cancel()
        progress.pause()
        #expect(!progress.isPaused)
        #expect(pauses.count == 0)
    }
}
