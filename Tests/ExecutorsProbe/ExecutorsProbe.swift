import Dispatch
import LoopKit
import LoopKitExecutors
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// An `async` main on LoopKit's executors, for the executor tests: `ExecutorsProbe main` installs the main
/// loop as Swift's main executor, `ExecutorsProbe group` also a two-loop group as the default executor.
/// It prints one line per check, `ok <check>` or `FAIL <check>`, and exits 1 when any failed.
@main
struct ExecutorsProbe {
    static func main() async throws {
        let scenario = CommandLine.arguments.dropFirst().first ?? ""
        let group = scenario == "group" ? try LoopGroup(threads: 2, name: "probe")
            : scenario == "fan-out" ? try LoopGroup(threads: 1, name: "probe") : nil
        LoopKitExecutors.install(defaultExecutor: group)   // the one line, before any await
        let main = EventLoop.main
        check(LoopKitExecutors.isInstalled, "installed")

        // Past the first await, main runs as a job of the main loop.
        await Task.yield()
        check(EventLoop.current === main && main.isCurrent, "the async main goes on inside the main loop")
        // Installed, a @MainActor job is the main loop's own queued work (R1-R3): a task made between two
        // enqueues runs between them, in the same iteration (issue 43, item 5: it came one iteration late).
        let order = Recorded()
        try main.enqueue { order.add(1_000 + main.iteration) }
        Task { order.add(2_000 + main.iteration) }
        try main.enqueue { order.add(3_000 + main.iteration) }
        while order.values.count < 3 { await Task.yield() }
        let ran = order.values
        let inOrder = ran.map { $0 / 1_000 } == [1, 2, 3] && Set(ran.map { $0 % 1_000 }).count == 1
        check(inOrder, "a @MainActor task made between two enqueues runs between them, in their iteration" + (inOrder ? "" : " \(ran)"))
        let resumedFrom = main.iteration
        await Task.yield()
        let resumedIn = main.iteration
        check(resumedIn == resumedFrom + 1,
              "the async main's continuation after a yield runs in the next iteration" + (resumedIn == resumedFrom + 1 ? "" : " (\(resumedFrom) -> \(resumedIn))"))
        let fromAnotherThread = await Task.detached { await MainActor.run { EventLoop.current === EventLoop.main } }.value
        check(fromAnotherThread, "MainActor.run from another task runs in the main loop")
        MainActor.assertIsolated("the async main")
        let dispatched = await withCheckedContinuation { continuation in
            DispatchQueue.main.async { continuation.resume(returning: EventLoop.current === EventLoop.main) }
        }
        check(dispatched, "DispatchQueue.main blocks still run in the main loop (R12)")
        // Task.sleep is a nonisolated async function: Swift runs it off the main actor, on the global
        // executor, which times it (Dispatch, or the installed group's loops); the task comes back through the
        // main executor, to the main loop.
        try await Task.sleep(for: .milliseconds(2))
        check(EventLoop.current === main, "Task.sleep on the main actor resumes on the main loop")
        // A sleep on the main loop's clock ends with one of its timers. EventLoopClock.sleep is nonisolated too,
        // so the task may come back to the main actor through the global executor: in that iteration or the
        // next. (The last sleep's iteration reports after the observer is removed, so it is not checked.)
        let mainTimerIterations = Recorded()
        try main.setIterationObserver { report in
            if report.timersFired > 0 { mainTimerIterations.add(report.iteration) }
        }
        var sleptIn: [UInt64] = []
        for _ in 0..<5 {
            try await Task.sleep(for: .milliseconds(1), clock: main.clock)
            sleptIn.append(EventLoop.current === main ? main.iteration : 0)
        }
        try main.setIterationObserver(nil)
        let timers = mainTimerIterations.values
        check(sleptIn.dropLast().allSatisfy { timers.contains($0) || timers.contains($0 &- 1) },
              "a sleep on the main loop's clock ends with a timer of the main loop")

        if scenario == "group", let group {
            let onGroup = await Task.detached { group.loops.contains { $0 === EventLoop.current } }.value
            check(onGroup, "a task with no other executor (Task.detached) runs on a loop of the installed group")
            let children = await withTaskGroup(of: Bool.self) { tasks in
                for _ in 0..<1_000 { tasks.addTask { group.loops.contains { $0 === EventLoop.current } } }
                var count = 0
                for await onLoop in tasks where onLoop { count += 1 }
                return count
            }
            check(children == 1_000, "1,000 child tasks all ran on the group's loops (\(children))")
            // The first child holds its loop until a child has run on the other loop: the waiting children are
            // taken by the loop that is free (the shared queue), not left behind the busy one.
            let busyLoop = FirstLoop()
            let otherLoopRan = DispatchSemaphore(value: 0)
            let loopsUsed = await withTaskGroup(of: Int.self) { tasks in
                for _ in 0..<64 {
                    tasks.addTask {
                        let here = group.loops.firstIndex { $0 === EventLoop.current } ?? -1
                        let onBusyLoop = busyLoop.claim(here) == here
                        if onBusyLoop {
                            // Each child on the busy loop waits for the other loop, then passes the signal on.
                            guard otherLoopRan.wait(timeout: .now() + .seconds(30)) == .success else { return -2 }
                            otherLoopRan.signal()
                        } else {
                            otherLoopRan.signal()
                        }
                        return here
                    }
                }
                var used = Set<Int>()
                for await index in tasks { used.insert(index) }
                return used
            }
            check(loopsUsed == [0, 1], "while one loop is busy in a child, the other loop takes the waiting children (\(loopsUsed.sorted()))")
        }
        if scenario == "fan-out", let loop = group?.loops.first {
            // Children and their parent on one loop: each await costs a few iterations at most.
            let before = loop.iteration
            let children = await Task.detached {
                await withTaskGroup(of: Int.self) { tasks in
                    for index in 0..<100 { tasks.addTask { index } }
                    var sum = 0
                    for await value in tasks { sum += value }
                    return sum
                }
            }.value
            let perChild = Double(loop.iteration - before) / 100
            check(children == 4_950 && perChild <= 0.5,
                  "a 100-child task group on a one-loop default executor takes at most half an iteration per child")
            // A sleep ends with one of the loop's timers, and the task goes on in that timer's iteration.
            let timerIterations = Recorded()
            try await loop.perform {
                try loop.setIterationObserver { report in
                    if report.timersFired > 0 { timerIterations.add(report.iteration) }
                }
            }
            let wokeIn = await Task.detached { () -> UInt64 in
                try? await Task.sleep(for: .milliseconds(1))
                return loop.iteration
            }.value
            // The iteration the task went on in reports at its end, which may not have come yet: read once the loop
            // has begun a later one, on the loop (`perform`, a nonisolated async function, runs on the default
            // executor, so on this loop, inline).
            while loop.iteration <= wokeIn { await Task.yield() }
            let timers = try await loop.perform { timerIterations.values }
            check(timers.contains(wokeIn), "a task on the default executor goes on in the iteration whose timer woke it")
        }
        let failed = failures.load(ordering: .relaxed)
        print(failed == 0 ? "==> every check passed" : "==> \(failed) check(s) failed")
        exit(failed == 0 ? 0 : 1)
    }

    static let failures = Atomic<Int>(0)

    /// Iterations an observer saw, from the loop's thread.
    final class Recorded: Sendable {
        private let list = Mutex<[UInt64]>([])
        func add(_ value: UInt64) { list.withLock { $0.append(value) } }
        var values: [UInt64] { list.withLock { $0 } }
    }

    static func check(_ ok: Bool, _ what: String) {
        print((ok ? "ok " : "FAIL ") + what)
        if !ok { failures.add(1, ordering: .relaxed) }
    }
}

/// The first loop a child ran on, claimed once.
final class FirstLoop: Sendable {
    private let index = Atomic<Int>(-1)

    /// Claims `index` unless a loop was claimed before; returns the claimed loop's index.
    func claim(_ candidate: Int) -> Int {
        let (exchanged, original) = index.compareExchange(expected: -1, desired: candidate, ordering: .acquiringAndReleasing)
        return exchanged ? candidate : original
    }
}
