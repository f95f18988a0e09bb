import Dispatch
@testable import LoopKit
import Synchronization
import Testing

/// The queue a group's loops share for Swift jobs with no executor of their own (what
/// `LoopKitExecutors.install(defaultExecutor:)` puts tasks on), driven here through a task executor of
/// the tests' own.
@Suite("Shared job queue")
struct SharedJobQueueTests {
    /// A task executor whose jobs go to a shared queue of `loops`, as the installed default executor's do.
    final class SharedQueueExecutor: TaskExecutor {
        let jobs: SharedJobQueue
        init(_ loops: [EventLoop]) { jobs = SharedJobQueue(loops: loops) }
        func enqueue(_ job: consuming ExecutorJob) {
            jobs.push(UnownedJob(job), runningOn: asUnownedTaskExecutor())
        }
    }

    /// The loops tasks ran on, in the order they ran.
    final class LoopsSeen: Sendable {
        private let seen = Mutex<[EventLoop?]>([])
        func add(_ loop: EventLoop?) { seen.withLock { $0.append(loop) } }
        var loops: [EventLoop?] { seen.withLock { $0 } }
    }

    @Test("Tasks queued from a thread outside the group all run, on the group's loops")
    func jobsFromOutsideRunOnTheLoops() async throws {
        let group = try LoopGroup(threads: 2, name: "shared")
        defer { group.shutdown() }
        let executor = SharedQueueExecutor(group.loops)
        let onLoops = await withTaskGroup(of: Bool.self) { tasks in
            for _ in 0..<500 {
                tasks.addTask(executorPreference: executor) { group.loops.contains { $0 === EventLoop.current } }
            }
            var count = 0
            for await onLoop in tasks where onLoop { count += 1 }
            return count
        }
        #expect(onLoops == 500)
    }

    @Test("A drain runs at most its budget of jobs in one iteration, so the loop polls between")
    func drainRunsAtMostItsBudgetPerIteration() async throws {
        let group = try LoopGroup(threads: 1, name: "shared")
        defer { group.shutdown() }
        let loop = group.loops[0]
        let executor = SharedQueueExecutor(group.loops)
        let jobCount = SharedJobQueue.drainBudget * 3 + 5
        // Queued from the loop itself in one job, so that all are waiting before the first drain.
        let iterations = try await loop.perform {
            (0..<jobCount).map { _ in
                Task(executorPreference: executor) { loop.iteration }
            }
        }
        var perIteration: [UInt64: Int] = [:]
        for task in iterations { perIteration[await task.value, default: 0] += 1 }
        #expect(perIteration.values.reduce(0, +) == jobCount)
        #expect(perIteration.values.max() == SharedJobQueue.drainBudget)
        #expect(perIteration.count == 4)
    }

    @Test("Tasks waiting behind a busy loop are taken by the group's other loop")
    func waitingJobsGoToTheFreeLoop() async throws {
        let group = try LoopGroup(threads: 2, name: "shared")
        defer { group.shutdown() }
        let executor = SharedQueueExecutor(group.loops)
        let busyLoop = group.loops[0]
        let ran = DispatchSemaphore(value: 0)
        // On the busy loop: queue two tasks, then hold the loop until both have run. Only the other loop can
        // run them, and the second one waiting is what asks it to.
        let outcome = try await busyLoop.perform { () -> (loops: [EventLoop?], released: Bool) in
            let ranOn = LoopsSeen()
            for _ in 0..<2 {
                Task(executorPreference: executor) {
                    ranOn.add(EventLoop.current)
                    ran.signal()
                }
            }
            let released = (0..<2).allSatisfy { _ in ran.wait(timeout: .now() + .seconds(30)) == .success }
            return (ranOn.loops, released)
        }
        #expect(outcome.released, "the other loop did not take the tasks")
        #expect(outcome.loops.count == 2 && outcome.loops.allSatisfy { $0 === group.loops[1] })
    }

    @Test("A lone task queued from a loop runs on that loop, after the work it was queued from")
    func loneJobStaysOnItsLoop() async throws {
        let group = try LoopGroup(threads: 2, name: "shared")
        defer { group.shutdown() }
        let executor = SharedQueueExecutor(group.loops)
        let loop = group.loops[0]
        for _ in 0..<20 {
            let task = try await loop.perform { Task(executorPreference: executor) { EventLoop.current } }
            #expect(await task.value === loop)
        }
    }

    @Test("A task queued from outside the group goes to a loop that is awake rather than one waiting in its poll")
    func outsidePushPrefersAnAwakeLoop() async throws {
        let group = try LoopGroup(threads: 2, name: "shared")
        defer { group.shutdown() }
        let executor = SharedQueueExecutor(group.loops)
        let awake = group.loops[0], waiting = group.loops[1]
        for _ in 0..<10 {  // the starting point rotates: each side is tried first
            let holding = DispatchSemaphore(value: 0), pushed = DispatchSemaphore(value: 0)
            try awake.enqueue {
                holding.signal()
                pushed.wait()  // the loop stays awake in this job while the task is queued
            }
            holding.wait()
            while !waiting.queue.isLoopWaiting { ThisThread.yieldCore() }
            let task = Task(executorPreference: executor) { EventLoop.current }
            pushed.signal()
            #expect(await task.value === awake)
        }
    }

    @Test("When every loop of the group has shut down, tasks go on on Swift's global executor")
    func afterShutdownJobsGoToTheGlobalExecutor() async throws {
        let group = try LoopGroup(threads: 2, name: "shared")
        let executor = SharedQueueExecutor(group.loops)
        group.shutdown()
        let ranOnALoop = await Task(executorPreference: executor) { EventLoop.current != nil }.value
        #expect(!ranOnALoop)
        // And again, once the queue knows every loop is gone.
        let again = await Task(executorPreference: executor) { 42 }.value
        #expect(again == 42)
    }
}
