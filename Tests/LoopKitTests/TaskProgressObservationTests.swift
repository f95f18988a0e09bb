@testable import LoopKit
import LoopKitTesting
import Testing

@Suite struct TaskProgressObservationTests {
    @Test func observerReceivesTheCurrentStateInTheNextIteration() throws {
        let driver = try LoopDriver()
        let loop = driver.loop
        let recorder = DeliveryRecorder()
        let progress = TaskProgress.discrete(totalUnitCount: 10)
        progress.increment(by: 3)
        let observation = progress.observe(on: loop, recorder.handler(for: loop))
        #expect(recorder.count == 0)
        try driver.step()
        #expect(recorder.snapshots.map(\.completedUnitCount) == [3])
        observation.cancel()
    }

    @Test func manyIncrementsBetweenTwoIterationsGiveOneDelivery() throws {
        let driver = try LoopDriver()
        let loop = driver.loop
        let recorder = DeliveryRecorder()
        let parent = TaskProgress.discrete(totalUnitCount: 4)
        let children = (0..<4).map { _ in TaskProgress.discrete(totalUnitCount: 5_000) }
        for child in children { parent.addChild(child, withPendingUnitCount: 1) }
        let observation = parent.observe(on: loop, recorder.handler(for: loop))
        try driver.step()
        #expect(recorder.count == 1)

        for i in 0..<10_000 { children[i % 4].increment() }
        #expect(try driver.step() == 1)
        #expect(recorder.count == 2)
        #expect(recorder.last?.fractionCompleted == 0.5)

        #expect(try driver.step() == 0)  // nothing changed, nothing delivered
        #expect(recorder.count == 2)

        for i in 0..<10_000 { children[i % 4].increment() }
        try driver.step()
        #expect(recorder.count == 3)
        #expect(recorder.last?.fractionCompleted == 1)
        #expect(recorder.last?.isFinished == true)
        #expect(recorder.last?.completedUnitCount == 4)
        observation.cancel()
    }

    @Test func changesInDeepDescendantsReachTheObserver() throws {
        let driver = try LoopDriver()
        let loop = driver.loop
        let recorder = DeliveryRecorder()
        let root = TaskProgress.discrete(totalUnitCount: 1)
        let middle = TaskProgress.discrete(totalUnitCount: 1)
        let leaf = TaskProgress.discrete(totalUnitCount: 4)
        root.addChild(middle, withPendingUnitCount: 1)
        middle.addChild(leaf, withPendingUnitCount: 1)
        let observation = root.observe(on: loop, recorder.handler(for: loop))
        try driver.step()
        for step in 1...4 {
            leaf.increment()
            _ = middle.fractionCompleted  // an unrelated read must not swallow the notification
            try driver.step()
            #expect(recorder.count == step + 1)
            #expect(recorder.last?.fractionCompleted == Double(step) / 4)
        }
        #expect(recorder.last?.isFinished == true)
        observation.cancel()
    }

    @Test func cancellationIsDelivered() throws {
        let driver = try LoopDriver()
        let loop = driver.loop
        let recorder = DeliveryRecorder()
        let parent = TaskProgress.discrete(totalUnitCount: 1)
        let child = TaskProgress.discrete(totalUnitCount: 1)
        parent.addChild(child, withPendingUnitCount: 1)
        let observation = child.observe(on: loop, recorder.handler(for: loop))
        try driver.step()
        parent.cancel()
        try driver.step()
        #expect(recorder.last?.isCancelled == true)
        observation.cancel()
    }

    @Test func cancelledObservationReceivesNothingAndEnqueuesNothing() throws {
        let driver = try LoopDriver()
        let loop = driver.loop
        let recorder = DeliveryRecorder()
        let progress = TaskProgress.discrete(totalUnitCount: 10)
        let observation = progress.observe(on: loop, recorder.handler(for: loop))
        try driver.step()
        observation.cancel()
        progress.increment()
        #expect(try driver.step() == 0)
        #expect(recorder.count == 1)
    }

    @Test func releasedTokenEndsTheObservation() throws {
        let driver = try LoopDriver()
        let loop = driver.loop
        let recorder = DeliveryRecorder()
        let progress = TaskProgress.discrete(totalUnitCount: 10)
        do {
            let observation = progress.observe(on: loop, recorder.handler(for: loop))
            try driver.step()
            withExtendedLifetime(observation) {}
        }
        progress.increment()
        #expect(try driver.step() == 0)
        #expect(recorder.count == 1)
    }

    @Test func twoObserversEachGetOneDeliveryPerIteration() throws {
        let driver = try LoopDriver()
        let loop = driver.loop
        let first = DeliveryRecorder()
        let second = DeliveryRecorder()
        let progress = TaskProgress.discrete(totalUnitCount: 100)
        let a = progress.observe(on: loop, first.handler(for: loop))
        let b = progress.observe(on: loop, second.handler(for: loop))
        try driver.step()
        for _ in 0..<100 { progress.increment() }
        try driver.step()
        #expect(first.count == 2 && second.count == 2)
        #expect(first.last?.isFinished == true && second.last?.isFinished == true)
        a.cancel()
        b.cancel()
    }

    @Test func snapshotsSequenceEndsAfterTheFinalState() async throws {
        let driver = try LoopDriver()
        let loop = driver.loop
        let progress = TaskProgress.discrete(totalUnitCount: 3)
        let stream = progress.snapshots(on: loop)
        try driver.step()                    // initial state
        progress.increment(by: 3)
        try driver.step()                    // final state
        var seen: [Int64] = []
        for await snapshot in stream { seen.append(snapshot.completedUnitCount) }
        // The stream keeps the newest snapshot for a slow consumer, so the initial one may be dropped.
        #expect(seen.last == 3)
        #expect(seen.count <= 2)
    }

    @Test func shutDownLoopEndsTheObservation() throws {
        let driver = try LoopDriver()
        let loop = driver.loop
        loop.shutdown()
        let recorder = DeliveryRecorder()
        let progress = TaskProgress.discrete(totalUnitCount: 1)
        let observation = progress.observe(on: loop, recorder.handler(for: loop))
        progress.increment()
        #expect(!driver.hasPendingWork)  // nothing was enqueued on the refusing loop
        #expect(recorder.count == 0)
        observation.cancel()
    }
}
