import Foundation
@testable import LoopKit
import Synchronization
import Testing

/// The next-iteration queue's protocol, tested directly (R1–R3, R7, R10).
@Suite("NextIterationQueue")
struct NextIterationQueueTests {
    /// The labels jobs recorded, in the order they ran.
    private final class Log: Sendable {
        private let entries = Mutex<[String]>([])
        func append(_ label: String) { entries.withLock { $0.append(label) } }
        var labels: [String] { entries.withLock { $0 } }
    }

    /// A job that appends `label` to `log`.
    private func job(_ label: String, _ log: Log) -> Job {
        Job { log.append(label) }
    }

    private func run(_ batch: consuming JobBuffer) -> Int {
        var batch = batch
        return batch.runFront(limit: .max)
    }

    @Test("only the first push from another thread since the last snapshot asks for a wake-up (R7)")
    func oneWakeUpPerSnapshot() throws {
        let queue = NextIterationQueue(owner: .current)
        let log = Log()
        #expect(try queue.pushFromAnotherThread(job("a", log)))
        #expect(try !queue.pushFromAnotherThread(job("b", log)))
        #expect(queue.hasJobsFromOtherThreads)
        #expect(run(queue.takeSnapshot()) == 2)
        #expect(try queue.pushFromAnotherThread(job("c", log)))
    }

    @Test("only the first loop-thread push since the last snapshot asks for a drain")
    func oneDrainRequestPerSnapshot() throws {
        let queue = NextIterationQueue(owner: .current)
        let log = Log()
        #expect(try queue.pushOnLoopThread(job("a", log)))
        #expect(try !queue.pushOnLoopThread(job("b", log)))
        _ = run(queue.takeSnapshot())
        #expect(try queue.pushOnLoopThread(job("c", log)))
    }

    @Test("a loop-thread push goes behind the jobs other threads queued before it (R1)")
    func loopThreadPushKeepsCrossThreadOrder() throws {
        let queue = NextIterationQueue(owner: .current)
        let log = Log()
        _ = try queue.pushFromAnotherThread(job("remote", log))
        _ = try queue.pushOnLoopThread(job("local", log))
        _ = try queue.pushFromAnotherThread(job("remote-after", log))
        _ = run(queue.takeSnapshot())
        #expect(log.labels == ["remote", "local", "remote-after"])
    }

    @Test("after a loop-thread push moved the inbox early, the next snapshot still re-arms wake-ups")
    func earlyMoveStillClearsTheWakeUpFlag() throws {
        let queue = NextIterationQueue(owner: .current)
        let log = Log()
        #expect(try queue.pushFromAnotherThread(job("remote", log)))
        _ = try queue.pushOnLoopThread(job("local", log))
        #expect(!queue.hasJobsFromOtherThreads)
        _ = run(queue.takeSnapshot())
        #expect(try queue.pushFromAnotherThread(job("next", log)))
    }

    @Test("a snapshot holds exactly what was queued before it; jobs its jobs queue wait for the next (R2, R3)")
    func snapshotExcludesWorkQueuedWhileItRuns() throws {
        let queue = NextIterationQueue(owner: .current)
        let log = Log()
        let inner = job("inner", log)
        _ = try queue.pushOnLoopThread(Job {
            log.append("outer")
            _ = try? queue.pushOnLoopThread(inner)
        })
        var first = queue.takeSnapshot()
        let ranFirst = first.runFront(limit: .max)
        queue.recycle(first)
        #expect(ranFirst == 1)
        #expect(log.labels == ["outer"])
        #expect(queue.hasJobs)
        #expect(run(queue.takeSnapshot()) == 1)
        #expect(log.labels == ["outer", "inner"])
    }

    @Test("what a drain limit left unrun goes back ahead of anything queued since (R1)")
    func putBackKeepsOrder() throws {
        let queue = NextIterationQueue(owner: .current)
        let log = Log()
        for label in ["1", "2", "3"] { _ = try queue.pushOnLoopThread(job(label, log)) }
        var batch = queue.takeSnapshot()
        let ran = batch.runFront(limit: 1)
        _ = try queue.pushOnLoopThread(job("4", log))
        let drainRequested = queue.putBack(&batch)
        queue.recycle(batch)
        #expect(ran == 1)
        #expect(!drainRequested)  // the push of "4" already asked for a drain
        _ = run(queue.takeSnapshot())
        #expect(log.labels == ["1", "2", "3", "4"])
    }

    @Test("a closed queue refuses pushes from every thread and keeps what it holds (R10)")
    func closedQueueRefusesWork() throws {
        let queue = NextIterationQueue(owner: .current)
        let log = Log()
        _ = try queue.pushFromAnotherThread(job("before", log))
        queue.close()
        queue.close()
        #expect(!queue.isAccepting)
        #expect(throws: EventLoopError.shutDown) { _ = try queue.pushFromAnotherThread(job("after", log)) }
        #expect(throws: EventLoopError.shutDown) { _ = try queue.pushOnLoopThread(job("after", log)) }
        #expect(run(queue.takeSnapshot()) == 1)
        #expect(log.labels == ["before"])
    }

    @Test("pushes from several threads keep each thread's order and are all taken")
    func concurrentPushesKeepPerThreadOrder() throws {
        let queue = NextIterationQueue(owner: .current)
        let seen = Mutex<[Int: Int]>([:])
        let outOfOrder = Atomic<Int>(0)
        let threads = 4, perThread = 2_000
        let wakeUps = Atomic<Int>(0)
        let done = Atomic<Int>(0)
        for thread in 0..<threads {
            Thread {
                for index in 0..<perThread {
                    let woke = try! queue.pushFromAnotherThread(Job {
                        seen.withLock { last in
                            if index <= last[thread, default: -1] { outOfOrder.add(1, ordering: .relaxed) }
                            last[thread] = index
                        }
                    })
                    if woke { wakeUps.add(1, ordering: .relaxed) }
                }
                done.add(1, ordering: .releasing)
            }.start()
        }
        var ran = 0, snapshots = 0
        while done.load(ordering: .acquiring) < threads || queue.hasJobs {
            ran += run(queue.takeSnapshot())
            snapshots += 1
        }
        #expect(ran == threads * perThread)
        #expect(outOfOrder.load(ordering: .relaxed) == 0)
        #expect(wakeUps.load(ordering: .relaxed) <= snapshots)
    }
}
