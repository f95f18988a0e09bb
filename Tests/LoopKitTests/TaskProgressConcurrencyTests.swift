@testable import LoopKit
import LoopKitTesting
import Synchronization
import Testing

@Suite struct TaskProgressConcurrencyTests {
    @Test func concurrentIncrementsGiveExactTotals() async {
        let parent = TaskProgress.discrete(totalUnitCount: 5)
        let children = (0..<4).map { _ in TaskProgress.discrete(totalUnitCount: 50_000) }
        for child in children { parent.addChild(child, withPendingUnitCount: 1) }
        await withTaskGroup(of: Void.self) { group in
            for child in children {
                group.addTask {
                    for _ in 0..<50_000 { child.increment() }
                }
            }
            group.addTask {
                for _ in 0..<1_000 { parent.increment(by: 1) }  // the parent's own unit, undone 999 times
                parent.increment(by: -999)
            }
            group.addTask {
                for _ in 0..<1_000 { _ = parent.fractionCompleted }  // concurrent reads
            }
        }
        for child in children { #expect(child.completedUnitCount == 50_000) }
        #expect(parent.completedUnitCount == 5)
        #expect(parent.fractionCompleted == 1)
        #expect(parent.isFinished)
    }

    @Test func concurrentIncrementsWithObserverDeliverAtMostOncePerIterationAndTheFinalState() throws {
        // The loop belongs to this thread, which steps it while four producer threads increment.
        let driver = try LoopDriver()
        let loop = driver.loop
        let recorder = DeliveryRecorder()
        let parent = TaskProgress.discrete(totalUnitCount: 4)
        let children = (0..<4).map { _ in TaskProgress.discrete(totalUnitCount: 25_000) }
        for child in children { parent.addChild(child, withPendingUnitCount: 1) }
        let observation = parent.observe(on: loop, recorder.handler(for: loop))
        let producersDone = RunCounter()
        let threads = children.map { child in
            startThread {
                for _ in 0..<25_000 { child.increment() }
                producersDone.bump()
            }
        }
        while producersDone.count < 4 { try driver.step() }
        try driver.runUntilIdle()
        for thread in threads { thread.wait() }
        #expect(recorder.mostPerIteration == 1)
        #expect(recorder.last?.fractionCompleted == 1)
        #expect(recorder.last?.isFinished == true)
        #expect(recorder.count <= Int(loop.iteration))
        observation.cancel()
    }
}
