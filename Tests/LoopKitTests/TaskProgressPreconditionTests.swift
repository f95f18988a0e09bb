import LoopKit
import Testing

@Suite struct TaskProgressPreconditionTests {
    @Test func joiningASecondParentTraps() async {
        await #expect(processExitsWith: .failure) {
            let child = TaskProgress.discrete(totalUnitCount: 1)
            TaskProgress.discrete(totalUnitCount: 1).addChild(child, withPendingUnitCount: 1)
            TaskProgress.discrete(totalUnitCount: 1).addChild(child, withPendingUnitCount: 1)
        }
    }

    @Test func addingAnAncestorAsAChildTraps() async {
        await #expect(processExitsWith: .failure) {
            let root = TaskProgress.discrete(totalUnitCount: 1)
            let child = TaskProgress.discrete(totalUnitCount: 1)
            root.addChild(child, withPendingUnitCount: 1)
            child.addChild(root, withPendingUnitCount: 1)
        }
    }

    @Test func resignCurrentWithoutBecomeCurrentTraps() async {
        await #expect(processExitsWith: .failure) {
            TaskProgress.discrete(totalUnitCount: 1).resignCurrent()
        }
    }

    @Test func negativePendingUnitCountTraps() async {
        await #expect(processExitsWith: .failure) {
            TaskProgress.discrete(totalUnitCount: 1)
                .addChild(TaskProgress.discrete(totalUnitCount: 1), withPendingUnitCount: -1)
        }
    }
}
