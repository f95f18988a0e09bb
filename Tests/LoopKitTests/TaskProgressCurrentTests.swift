@testable import LoopKit
import Testing

@Suite struct TaskProgressCurrentTests {
    @Test func progressCreatedInsideWithCurrentBecomesChildWithPendingUnits() {
        let parent = TaskProgress.discrete(totalUnitCount: 10)
        let child = parent.withCurrent(pendingUnitCount: 4) {
            #expect(TaskProgress.current === parent)
            return TaskProgress(totalUnitCount: 2)
        }
        #expect(TaskProgress.current == nil)
        child.increment()
        #expect(parent.fractionCompleted == 0.2)
        child.increment()
        #expect(parent.completedUnitCount == 4)
    }

    @Test func onlyTheFirstImplicitChildReceivesThePendingUnits() {
        let parent = TaskProgress.discrete(totalUnitCount: 10)
        let (first, second) = parent.withCurrent(pendingUnitCount: 4) {
            (TaskProgress(totalUnitCount: 1), TaskProgress(totalUnitCount: 1))
        }
        second.increment()
        #expect(parent.completedUnitCount == 0)
        first.increment()
        #expect(parent.completedUnitCount == 4)
    }

    @Test func unclaimedPendingUnitsCompleteWhenTheScopeEnds() {
        let parent = TaskProgress.discrete(totalUnitCount: 10)
        parent.withCurrent(pendingUnitCount: 3) {}
        #expect(parent.completedUnitCount == 3)
    }

    @Test func withCurrentSurvivesAwaitAndReachesChildTasks() async {
        let parent = TaskProgress.discrete(totalUnitCount: 10)
        let child = await parent.withCurrent(pendingUnitCount: 5) { () async -> TaskProgress in
            await Task.yield()
            #expect(TaskProgress.current === parent)
            return await Task { TaskProgress(totalUnitCount: 2) }.value
        }
        child.increment()
        #expect(parent.fractionCompleted == 0.25)
        #expect(TaskProgress.current == nil)
    }

    @Test func becomeCurrentMakesTheNextProgressAChild() {
        let parent = TaskProgress.discrete(totalUnitCount: 10)
        parent.becomeCurrent(withPendingUnitCount: 5)
        #expect(TaskProgress.current === parent)
        let child = TaskProgress(totalUnitCount: 10)
        parent.resignCurrent()
        #expect(TaskProgress.current == nil)
        child.increment(by: 10)
        #expect(parent.completedUnitCount == 5)
    }

    @Test func resignCurrentCompletesUnclaimedPendingUnits() {
        let parent = TaskProgress.discrete(totalUnitCount: 10)
        parent.becomeCurrent(withPendingUnitCount: 2)
        parent.resignCurrent()
        #expect(parent.completedUnitCount == 2)
    }

    @Test func theInnermostActivationIsCurrent() {
        let outer = TaskProgress.discrete(totalUnitCount: 1)
        let inner = TaskProgress.discrete(totalUnitCount: 1)
        outer.becomeCurrent(withPendingUnitCount: 1)
        inner.withCurrent(pendingUnitCount: 1) {
            #expect(TaskProgress.current === inner)
        }
        #expect(TaskProgress.current === outer)
        inner.withCurrent(pendingUnitCount: 0) {
            outer.becomeCurrent(withPendingUnitCount: 0)
            #expect(TaskProgress.current === outer)
            outer.resignCurrent()
            #expect(TaskProgress.current === inner)
        }
        outer.resignCurrent()
        #expect(TaskProgress.current == nil)
    }

    @Test func discreteProgressIgnoresTheCurrentProgress() {
        let parent = TaskProgress.discrete(totalUnitCount: 1)
        let loner = parent.withCurrent(pendingUnitCount: 1) { TaskProgress.discrete(totalUnitCount: 1) }
        loner.increment()
        // The scope ended with its units unclaimed, so they completed; the loner did not join.
        #expect(parent.completedUnitCount == 1)
    }
}
