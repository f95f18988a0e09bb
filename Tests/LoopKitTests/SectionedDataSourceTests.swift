import Foundation
import LoopKit
import LoopKitTesting
import Synchronization
import Testing

typealias DiffRowSource = SectionedDataSource<DiffHeader, DiffRow>

/// What a data source delivered, in order, and whether each delivery ran on the loop thread.
final class DiffDeliveryLog {
    private(set) var changes: [DiffRowSource.Changes] = []
    private(set) var onLoopThread: [Bool] = []
    var generations: [UInt64] { changes.map(\.generation) }
    var last: DiffRowSource.Changes? { changes.last }

    /// Records every delivery of `source`; `then` runs after recording (to commit, say).
    init(_ source: DiffRowSource, then: ((DiffRowSource.Changes) -> Void)? = nil) throws {
        let loop = source.loop
        try source.onChanges { [weak self] changes in
            guard let self else { return }
            self.changes.append(changes)
            self.onLoopThread.append(loop.isCurrent)
            then?(changes)
        }
    }
}

/// Item identities whose `diffID` was read on each loop (nil: no loop was running): where diffs ran.
let diffIdentityReads = Lock<Set<ObjectIdentifier?>>([])

/// A row that records where its identity is read; only a diff reads it.
struct DiffThreadRow: Diffable, Hashable, Sendable {
    var id: Int
    var diffID: Int {
        let loop = EventLoop.current.map(ObjectIdentifier.init)
        diffIdentityReads.withLock { _ = $0.insert(loop) }
        return id
    }
}

/// Submitting data, delivering changes on the loop and committing them as batch updates. Deterministic:
/// the data source's loop is stepped by a ``LoopDriver`` on the test thread, the worker's progress is
/// observed (its delivery queued, a gate opened), never waited for with a sleep.
@Suite("SectionedDataSource")
struct SectionedDataSourceTests {
    func section(_ id: Int, _ items: [Int], value: Int = 0) -> DiffRowSection {
        DiffRowSection(DiffHeader(id: id, title: 0), items: items.map { DiffRow(id: $0, value: value) })
    }

    /// Runs the loop, waiting for the worker's wake-ups (R7), until `condition` holds.
    func run(_ loop: EventLoop, until condition: () -> Bool) throws {
        while !condition() { try loop.runOnce(blocking: true) }
    }

    /// Waits (yielding, never sleeping) until the worker has queued a delivery on `loop`.
    func waitForQueuedDelivery(on loop: EventLoop) {
        spin { loop.hasQueuedWork }
    }

    /// Blocks the worker until the returned semaphore is signalled.
    func gate(_ worker: EventLoop) throws -> DispatchSemaphore {
        let gate = DispatchSemaphore(value: 0)
        try worker.enqueue { gate.wait() }
        return gate
    }

    @Test("Deliveries arrive on the loop thread, in submit order; each commit makes the model the submitted data inside the batch")
    func deliveriesInOrderOnTheLoop() throws {
        let driver = try LoopDriver()
        let workers = try LoopGroup(threads: 1)
        defer { workers.shutdown() }
        let old = [section(1, [1, 2, 3]), section(2, [4, 5])]
        let source = try DiffRowSource(old, on: driver.loop, diffingOn: workers)
        let target = DiffRecordingTarget(old)
        var modelInsideBatch: [Bool] = []
        target.insideBatch = { stage in modelInsideBatch.append(source.sections == stage.sections) }
        let log = try DiffDeliveryLog(source)

        var rng = DiffTestRNG(seed: 0xDA7A)
        var current = old
        for round in 1...20 {
            var next = current
            for _ in 0..<3 {
                let (_, edited) = diffRandomSections(&rng)
                next = edited.isEmpty ? next : edited
            }
            let generation = try source.submit(next)
            #expect(generation == UInt64(round))
            try run(driver.loop) { log.changes.count == round }
            try source.commit(log.last!, to: target)
            #expect(source.sections == next)
            #expect(source.revision == UInt64(round))
            #expect(target.displayed == next)
            current = next
        }
        #expect(log.generations == Array(1...20))
        #expect(log.onLoopThread.allSatisfy { $0 })
        #expect(target.failures.isEmpty)
        #expect(!modelInsideBatch.isEmpty && modelInsideBatch.allSatisfy { $0 })
    }

    @Test("The diff runs on the worker loop, never on the data source's loop")
    func diffRunsOnTheWorker() throws {
        let driver = try LoopDriver()
        let workers = try LoopGroup(threads: 1)
        defer { workers.shutdown() }
        let old = [DiffSection(DiffHeader(id: 1, title: 0), items: (0..<100).map { DiffThreadRow(id: $0) })]
        let source = try SectionedDataSource(old, on: driver.loop, diffingOn: workers)
        var delivered: [SectionedDataSource<DiffHeader, DiffThreadRow>.Changes] = []
        try source.onChanges { delivered.append($0) }
        diffIdentityReads.withLock { $0 = [] }
        try source.submit([DiffSection(DiffHeader(id: 1, title: 0), items: (0..<100).reversed().map { DiffThreadRow(id: $0) })])
        try run(driver.loop) { delivered.count == 1 }
        #expect(diffIdentityReads.withLock { $0 } == [ObjectIdentifier(workers.loops[0])])
        #expect(delivered[0].diff.itemMoves.count == 99)
    }

    @Test("A submit overtaken before its diff ran is dropped on the worker")
    func staleSubmitDroppedOnTheWorker() throws {
        let driver = try LoopDriver()
        let workers = try LoopGroup(threads: 1)
        defer { workers.shutdown() }
        let source = try DiffRowSource([section(1, [1])], on: driver.loop, diffingOn: workers)
        let log = try DiffDeliveryLog(source)
        let gate = try gate(workers.loops[0])
        try source.submit([section(1, [1, 2])])
        try source.submit([section(1, [1, 2, 3])])
        gate.signal()
        try run(driver.loop) { !log.changes.isEmpty }
        try driver.runUntilIdle()
        #expect(log.generations == [2])
        #expect(log.last?.sections == [section(1, [1, 2, 3])])
    }

    @Test("A diff computed but overtaken by a newer submit before delivery is dropped on the loop")
    func staleDiffDroppedOnTheLoop() throws {
        let driver = try LoopDriver()
        let workers = try LoopGroup(threads: 1)
        defer { workers.shutdown() }
        let source = try DiffRowSource([section(1, [1])], on: driver.loop, diffingOn: workers)
        let log = try DiffDeliveryLog(source)
        try source.submit([section(1, [1, 2])])
        waitForQueuedDelivery(on: driver.loop)  // generation 1's diff is done, its delivery queued
        let gate = try gate(workers.loops[0])
        try source.submit([section(1, [2, 1])])
        try driver.step()  // generation 1's delivery runs: generation 2 exists, so it is dropped
        #expect(log.changes.isEmpty)
        gate.signal()
        try run(driver.loop) { !log.changes.isEmpty }
        #expect(log.generations == [2])
        #expect(log.last?.sections == [section(1, [2, 1])])
    }

    @Test("Changes computed against a model committed to meanwhile are diffed again, never delivered stale")
    func rediffWhenTheModelChangedDuringTheDiff() throws {
        let driver = try LoopDriver()
        let workers = try LoopGroup(threads: 1)
        defer { workers.shutdown() }
        let old = [section(1, [1, 2])]
        let source = try DiffRowSource(old, on: driver.loop, diffingOn: workers)
        let target = DiffRecordingTarget(old)
        let log = try DiffDeliveryLog(source)
        let a = [section(1, [2, 1, 3])], b = [section(1, [3, 4]), section(2, [1])]
        try source.submit(a)
        try run(driver.loop) { log.changes.count == 1 }
        try source.submit(b)
        waitForQueuedDelivery(on: driver.loop)  // generation 2, computed against revision 0
        try source.commit(log.changes[0], to: target)  // revision 1
        try run(driver.loop) { log.changes.count == 2 }
        #expect(log.generations == [1, 2])
        #expect(log.changes.map(\.baseRevision) == [0, 1])
        try source.commit(log.changes[1], to: target)
        #expect(source.sections == b)
        #expect(target.displayed == b)
        #expect(target.failures.isEmpty)
    }

    @Test("Committing older changes after a newer delivery refuses the newer, now stale, changes and delivers them again")
    func staleCommitRefusedThenRedelivered() throws {
        let driver = try LoopDriver()
        let workers = try LoopGroup(threads: 1)
        defer { workers.shutdown() }
        let old = [section(1, [1, 2])]
        let source = try DiffRowSource(old, on: driver.loop, diffingOn: workers)
        let target = DiffRecordingTarget(old)
        let log = try DiffDeliveryLog(source)
        let a = [section(1, [1, 2, 3])], b = [section(1, [3, 2]), section(2, [5])]
        try source.submit(a)
        try run(driver.loop) { log.changes.count == 1 }
        try source.submit(b)
        try run(driver.loop) { log.changes.count == 2 }
        let (first, second) = (log.changes[0], log.changes[1])
        #expect(first.baseRevision == 0 && second.baseRevision == 0)

        try source.commit(first, to: target)
        #expect(source.sections == a)
        #expect(throws: BatchUpdateError.staleChanges(computedAgainst: 0, current: 1)) {
            try source.commit(second, to: target)
        }
        #expect(source.sections == a)
        #expect(target.displayed == a)

        try run(driver.loop) { log.changes.count == 3 }  // generation 2, diffed again against revision 1
        #expect(log.generations == [1, 2, 2])
        #expect(log.changes[2].baseRevision == 1)
        try source.commit(log.changes[2], to: target)
        #expect(source.sections == b)
        #expect(target.displayed == b)
        #expect(target.failures.isEmpty)
    }

    @Test("Commits apply in submit order: older or repeated changes are refused and touch nothing")
    func commitOrder() throws {
        let driver = try LoopDriver()
        let workers = try LoopGroup(threads: 1)
        defer { workers.shutdown() }
        let old = [section(1, [1])]
        let source = try DiffRowSource(old, on: driver.loop, diffingOn: workers)
        let target = DiffRecordingTarget(old)
        let log = try DiffDeliveryLog(source)
        try source.submit([section(1, [1, 2])])
        try run(driver.loop) { log.changes.count == 1 }
        try source.submit([section(1, [2, 1])])
        try run(driver.loop) { log.changes.count == 2 }

        try source.commit(log.changes[1], to: target)  // the newest first: fine
        let calls = target.calls
        #expect(throws: BatchUpdateError.outOfOrder(generation: 1, lastCommitted: 2)) {
            try source.commit(log.changes[0], to: target)
        }
        #expect(throws: BatchUpdateError.outOfOrder(generation: 2, lastCommitted: 2)) {
            try source.commit(log.changes[1], to: target)
        }
        #expect(source.sections == [section(1, [2, 1])])
        #expect(source.revision == 1)
        #expect(target.calls == calls)
    }

    @Test("Changes from another data source, a commit off the loop thread and a commit inside a commit are refused")
    func badCommits() throws {
        let driver = try LoopDriver()
        let workers = try LoopGroup(threads: 1)
        defer { workers.shutdown() }
        let old = [section(1, [1])]
        let source = try DiffRowSource(old, on: driver.loop, diffingOn: workers)
        let other = try DiffRowSource(old, on: driver.loop, diffingOn: workers)
        let log = try DiffDeliveryLog(source)
        let otherLog = try DiffDeliveryLog(other)
        try source.submit([section(1, [1, 2])])
        try other.submit([section(1, [1, 3])])
        try run(driver.loop) { log.changes.count == 1 && otherLog.changes.count == 1 }
        let target = DiffRecordingTarget(old)

        #expect(throws: BatchUpdateError.foreignChanges) { try source.commit(otherLog.changes[0], to: target) }
        let changes = log.changes[0]
        let offThread = onAnotherThread { () -> BatchUpdateError? in
            do throws(BatchUpdateError) { try source.commit(changes, to: DiffRecordingTarget(old)); return nil } catch { return error }
        }
        #expect(offThread == .wrongThread(operation: "commit(_:to:)"))

        var nested: BatchUpdateError?
        target.insideBatch = { _ in
            do throws(BatchUpdateError) { try source.commit(changes, to: DiffRecordingTarget(old)) } catch { nested = error }
        }
        try source.commit(changes, to: target)
        #expect(nested == .reentrantCommit)
        #expect(source.sections == [section(1, [1, 2])])
        #expect(other.sections == old)
    }

    @Test("Above the reload threshold a delivery is one reload stage, committed with reloadData")
    func reloadThreshold() throws {
        let driver = try LoopDriver()
        let workers = try LoopGroup(threads: 1)
        defer { workers.shutdown() }
        let old = [section(1, [1, 2, 3])]
        let source = try DiffRowSource(old, on: driver.loop, diffingOn: workers, reloadThreshold: 1)
        let target = DiffRecordingTarget(old)
        let log = try DiffDeliveryLog(source) { try? source.commit($0, to: target) }
        let new = [section(1, [3, 2, 1, 4])]
        try source.submit(new)
        try run(driver.loop) { log.changes.count == 1 }
        #expect(log.changes[0].stages.map(\.isReload) == [true])
        #expect(target.calls == ["reloadData"])
        #expect(source.sections == new)
        #expect(target.displayed == new)
    }

    @Test("Submits from many threads: deliveries keep generation order and the newest submit wins")
    func manySubmitters() throws {
        let driver = try LoopDriver()
        let workers = try LoopGroup(threads: 2)
        defer { workers.shutdown() }
        let source = try DiffRowSource([], on: driver.loop, diffingOn: workers)
        let target = DiffRecordingTarget([])
        let log = try DiffDeliveryLog(source) { try? source.commit($0, to: target) }
        let submitted = Lock<[UInt64: [DiffRowSection]]>([:])
        DispatchQueue.concurrentPerform(iterations: 4) { producer in
            var rng = DiffTestRNG(seed: UInt64(producer) &+ 0x5EED)
            for _ in 0..<50 {
                let (_, sections) = diffRandomSections(&rng)
                submitted.withLock { submitted in
                    submitted[try! source.submit(sections)] = sections
                }
            }
        }
        try run(driver.loop) { log.generations.last == 200 && source.revision > 0 && source.sections == submitted.withLock { $0[200] } }
        try driver.runUntilIdle()
        let generations = log.generations
        #expect(zip(generations, generations.dropFirst()).allSatisfy { $0 <= $1 })
        #expect(log.onLoopThread.allSatisfy { $0 })
        #expect(source.sections == submitted.withLock { $0[200] })
        #expect(target.displayed == source.sections)
        #expect(target.failures.isEmpty)
    }

    @Test("The changes stream yields deliveries in order, keeps the newest by default, and finishes with the data source")
    func changesStream() async throws {
        // Everything touching the loop runs before the first await, on the thread that owns the loop.
        let (all, newest, expected): (AsyncStream<DiffRowSource.Changes>, AsyncStream<DiffRowSource.Changes>, [DiffRowSection]) = try {
            let driver = try LoopDriver()
            let workers = try LoopGroup(threads: 1)
            defer { workers.shutdown() }
            var source: DiffRowSource? = try DiffRowSource([section(1, [1])], on: driver.loop, diffingOn: workers)
            let all = source!.changes(bufferingPolicy: .unbounded)
            let newest = source!.changes()
            let log = try DiffDeliveryLog(source!)
            for n in 2...4 {
                try source!.submit([section(1, Array(1...n))])
                try run(driver.loop) { log.changes.count == n - 1 }
            }
            source = nil  // finishes the streams
            return (all, newest, [section(1, [1, 2, 3, 4])])
        }()
        var generations: [UInt64] = []
        for await changes in all { generations.append(changes.generation) }
        #expect(generations == [1, 2, 3])
        var newestSeen: [DiffRowSource.Changes] = []
        for await changes in newest { newestSeen.append(changes) }
        #expect(newestSeen.map(\.generation) == [3])
        #expect(newestSeen.first?.sections == expected)
    }

    @Test("A worker that refuses to diff a stale submit again is reported through onDiagnostic, and the streams finish")
    func refusedRediffIsReported() async throws {
        let (stream, diagnostics, source): (AsyncStream<DiffRowSource.Changes>, [String], DiffRowSource) = try {
            let driver = try LoopDriver()
            let workers = try LoopGroup(threads: 1)
            let old = [section(1, [1, 2])]
            let source = try DiffRowSource(old, on: driver.loop, diffingOn: workers)
            let stream = source.changes(bufferingPolicy: .unbounded)
            let target = DiffRecordingTarget(old)
            let log = try DiffDeliveryLog(source)
            var diagnostics: [String] = []
            try source.onDiagnostic { diagnostics.append($0) }
            try source.submit([section(1, [1, 2, 3])])
            try run(driver.loop) { log.changes.count == 1 }
            try source.submit([section(1, [3, 2])])
            try run(driver.loop) { log.changes.count == 2 }
            workers.shutdown()
            try source.commit(log.changes[0], to: target)  // makes delivery 2 stale: it needs a re-diff
            return (stream, diagnostics, source)
        }()
        #expect(diagnostics.count == 1)
        #expect(diagnostics.first?.contains("refused") == true)
        var generations: [UInt64] = []
        for await changes in stream { generations.append(changes.generation) }  // finishes: no hang
        #expect(generations == [1, 2])
        withExtendedLifetime(source) {}
    }

    @Test("A delivery refused because the loop has shut down finishes the streams instead of leaving them waiting")
    func loopShutDownFinishesStreams() async throws {
        // The group is returned too: releasing it joins the worker, which waits on the gate.
        let (stream, source, workerGate, workers): (AsyncStream<DiffRowSource.Changes>, DiffRowSource, DispatchSemaphore, LoopGroup) = try {
            let driver = try LoopDriver()
            let workers = try LoopGroup(threads: 1)
            let source = try DiffRowSource([section(1, [1])], on: driver.loop, diffingOn: workers)
            let stream = source.changes(bufferingPolicy: .unbounded)
            let gate = try self.gate(workers.loops[0])
            try source.submit([section(1, [1, 2])])
            driver.loop.shutdown()
            return (stream, source, gate, workers)
        }()
        workerGate.signal()  // the worker diffs now; the loop refuses the delivery
        var count = 0
        for await _ in stream { count += 1 }
        #expect(count == 0)
        withExtendedLifetime(source) {}
        workers.shutdown()
    }

    @Test("A worker group holding only the data source's loop is refused")
    func workerMustBeAnotherLoop() throws {
        let group = try LoopGroup(threads: 1)
        defer { group.shutdown() }
        #expect(throws: EventLoopError.invalidArgument("the diff worker must be another loop than the data source's own")) {
            try DiffRowSource([], on: group.loops[0], diffingOn: group)
        }
    }

    @Test("Without a group the data source diffs on a worker of its own")
    func ownWorker() throws {
        let driver = try LoopDriver()
        let source = try DiffRowSource([section(1, [1])], on: driver.loop)
        let log = try DiffDeliveryLog(source)
        try source.submit([section(2, [1])])
        try run(driver.loop) { log.changes.count == 1 }
        #expect(log.last?.diff.sections.insertions == [0])
    }
}

/// Calls that must be made on the data source's loop thread.
@Suite("SectionedDataSource thread rules")
struct SectionedDataSourceThreadTests {
    @Test("Reading the model off the loop thread stops the process")
    func sectionsOffThread() async {
        await #expect(processExitsWith: .failure) {
            let loop = onAnotherThread { try! EventLoop() }
            let workers = try! LoopGroup(threads: 1)
            let source = try! DiffRowSource([], on: loop, diffingOn: workers)
            _ = source.sections
        }
    }

    @Test("Setting the handler off the loop thread is refused")
    func onChangesOffThread() throws {
        let driver = try LoopDriver()
        let workers = try LoopGroup(threads: 1)
        defer { workers.shutdown() }
        let source = try DiffRowSource([], on: driver.loop, diffingOn: workers)
        let error = onAnotherThread { () -> BatchUpdateError? in
            do throws(BatchUpdateError) { try source.onChanges(nil); return nil } catch { return error }
        }
        #expect(error == .wrongThread(operation: "onChanges(_:)"))
    }
}

/// The recording target itself: it must catch a stage that breaks the rules.
@Suite("DiffRecordingTarget")
struct DiffRecordingTargetTests {
    @Test("A stage that breaks the batch rules is recorded as a failure and leaves the copy as it was")
    func rejectsBadStage() {
        let old = [DiffRowSection(DiffHeader(id: 1, title: 0), items: [DiffRow(id: 1, value: 0), DiffRow(id: 2, value: 0)])]
        let moved = [DiffRowSection(DiffHeader(id: 1, title: 0), items: [DiffRow(id: 2, value: 0), DiffRow(id: 1, value: 1)])]
        let target = DiffRecordingTarget(old)
        let path = ItemPath(section: 0, item: 0)
        target.perform(BatchStage(
            itemMoves: [DiffPair(from: path, to: ItemPath(section: 0, item: 1))], itemReloads: [path], sections: moved))
        #expect(target.failures == [.reloadOfChangedPosition(.itemReload, .item(path))])
        #expect(target.displayed == old)
        #expect(target.batches.isEmpty)
    }

    @Test("Valid stages are applied to the target's own copy, which then equals each stage's data")
    func appliesValidStages() {
        var rng = DiffTestRNG(seed: 0x7A6E7)
        for _ in 0..<300 {
            let (old, new) = diffRandomSections(&rng)
            let target = DiffRecordingTarget(old)
            let stages = SectionedDiff(from: old, to: new).stages()
            target.commit(stages)
            #expect(target.failures.isEmpty)
            #expect(target.batches.map(\.sections) == stages.filter { !$0.isReload }.map(\.sections))
            #expect(target.displayed == new)
        }
    }
}
