// Swift's default executor, the third figure of `make bench-main`: actor hops and a task-group fan-out with
// LoopKit's loops as Swift's executors, with Swift's own, and with SwiftNIO's loops, each its own process.
//
//   GlobalExecutorHops --executor loopkit|default|nio [--loops 1] [--round-trips 100000] [--children 1000]
//                      [--fanouts 200] [--main-round-trips 20000] [--trace]
//
// What runs the tasks that have no executor of their own (set up first thing in this async main, before
// its first await; the installs belong to the whole process, so each executor is a process of its own and
// Benchmarks/main-bench.sh alternates them):
//   loopkit  `LoopKitExecutors.install(defaultExecutor: LoopGroup(threads: LOOPS))`: tasks on the group's
//            loops, which share one queue of them; the main actor on `EventLoop.main`
//   default  nothing installed: Swift's cooperative pool; the main actor on Dispatch's main queue
//            (`dispatchMain()`, as every async main on Linux)
//   nio      `NIOSingletons.groupLoopCountSuggestion = LOOPS`, then
//            `NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor()`: tasks on
//            NIO's singleton group; the main actor on Dispatch's main queue
//
// Measured from a `Task.detached` (so on the executor above), warm-up (a tenth) first, one timed run each:
//   actor      ROUND_TRIPS calls `await ponger.ping()` from an actor `Pinger` to an actor `Ponger` (two
//              default actors): ns per round trip (Pinger → Ponger → Pinger)
//   fanout     FANOUTS times, a task group adds CHILDREN children (`addTask { i }`) and sums their results:
//              ns per child (created, run, awaited)
//   mainactor  MAIN_ROUND_TRIPS `await MainActor.run { counter += 1 }`: ns per round trip (for information:
//              the main actor's executor differs between the processes, see above)
//
// `--trace` measures nothing: it prints the loop iteration in which each step of a five-child task group ran,
// from a task with no executor preference and, with `--executor loopkit`, from one that prefers the group's
// loop (how many loop iterations a default-executor task spends per `await`).
//
// Output:
//   check executor E loops N tasks_on ON          (ON: loopkit-group, nio-group or neither)
//   executors executor E loops N figure actor|fanout|mainactor count C ns X cpu_ns Y iterations I
// (ns: wall time per operation; cpu_ns: the process's CPU time per operation, every thread; iterations:
// how many loop iterations LoopKit's loops (the group's and the main loop) ran for the figure, 0 for the
// others)
import Dispatch
import Foundation
import LoopKit
import LoopKitExecutors
import NIOCore
import NIOPosix

let arguments = Array(CommandLine.arguments.dropFirst())
func option(_ name: String) -> String? {
    arguments.firstIndex(of: name).flatMap { $0 + 1 < arguments.count ? arguments[$0 + 1] : nil }
}

/// Nanoseconds on `clock`: `CLOCK_MONOTONIC` (wall) or `CLOCK_PROCESS_CPUTIME_ID` (every thread's CPU time).
func nanoseconds(_ clock: clockid_t = CLOCK_MONOTONIC) -> UInt64 {
    var ts = timespec()
    clock_gettime(clock, &ts)
    return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
}

actor Ponger {
    var count = 0
    func ping() -> Int {
        count &+= 1
        return count
    }
}

actor Pinger {
    let ponger = Ponger()

    /// `count` round trips to the Ponger.
    func run(_ count: Int) async {
        var sum = 0
        for _ in 0..<count { sum &+= await ponger.ping() }
        precondition(sum > 0)
    }
}

/// `fanouts` task groups of `children` children each.
nonisolated func fanOut(_ fanouts: Int, children: Int) async {
    for _ in 0..<fanouts {
        let sum = await withTaskGroup(of: Int.self) { tasks in
            for child in 0..<children { tasks.addTask { child } }
            var sum = 0
            for await value in tasks { sum &+= value }
            return sum
        }
        precondition(sum == children * (children - 1) / 2)
    }
}

@MainActor var mainCounter = 0

/// `count` awaited `MainActor.run` round trips from the calling task.
nonisolated func mainActorRoundTrips(_ count: Int) async {
    for _ in 0..<count { await MainActor.run { mainCounter &+= 1 } }
}

@main
struct GlobalExecutorHops {
    static func main() async throws {
        let executor = option("--executor") ?? "loopkit"
        let loops = option("--loops").flatMap { Int($0) } ?? 1
        let roundTrips = option("--round-trips").flatMap { Int($0) } ?? 100_000
        let children = option("--children").flatMap { Int($0) } ?? 1_000
        let fanouts = option("--fanouts").flatMap { Int($0) } ?? 200
        let mainRoundTrips = option("--main-round-trips").flatMap { Int($0) } ?? 20_000

        // The install, before the first await.
        var group: LoopGroup?
        switch executor {
        case "loopkit":
            group = try LoopGroup(threads: loops, name: "executor")
            LoopKitExecutors.install(defaultExecutor: group)
        case "nio":
            NIOSingletons.groupLoopCountSuggestion = loops
            guard NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor() else {
                print("GlobalExecutorHops: NIO's group could not be installed as the global executor")
                exit(1)
            }
        case "default":
            break
        default:
            print("GlobalExecutorHops: --executor loopkit|default|nio")
            exit(2)
        }

        let tasksOn = await Task.detached { [group] in
            if let group, group.loops.contains(where: { $0 === LoopKit.EventLoop.current }) { return "loopkit-group" }
            if MultiThreadedEventLoopGroup.currentEventLoop != nil { return "nio-group" }
            return "neither"
        }.value
        print("check executor \(executor) loops \(loops) tasks_on \(tasksOn)")

        if arguments.contains("--trace") {
            @Sendable func traced() async -> String {
                let iteration: @Sendable () -> UInt64 = { LoopKit.EventLoop.current?.iteration ?? 0 }
                var log: [String] = ["parent starts in iteration \(iteration())"]
                let lines = await withTaskGroup(of: (Int, UInt64).self) { tasks in
                    for child in 0..<5 { tasks.addTask { (child, iteration()) } }
                    var lines = ["parent has added 5 children in iteration \(iteration())"]
                    for await (child, ran) in tasks { lines.append("child \(child) ran in \(ran), parent got its result in \(iteration())") }
                    return lines
                }
                log += lines
                return log.joined(separator: "\n")
            }
            print("-- a task with no executor preference (Task.detached), on the installed group:")
            print(await Task.detached { await traced() }.value)
            if let group {
                print("-- the same with the group's loop as its executor preference (Task.detached(executorPreference:)):")
                print(await Task.detached(executorPreference: group.loops[0]) { await traced() }.value)
            }
            exit(0)
        }
        let pinger = Pinger()
        /// The loops' iterations so far (LoopKit only: the group's loops and the main loop).
        func iterations() -> UInt64 {
            guard let group else { return 0 }
            return group.loops.reduce(LoopKit.EventLoop.main.iteration) { $0 + $1.iteration }
        }
        /// Runs `body` in a detached task, timed; prints the figure's line unless it is a warm-up.
        func measure(_ figure: String?, _ count: Int, _ body: @escaping @Sendable () async -> Void) async {
            let (wall, cpu, loopIterations) = (nanoseconds(), nanoseconds(CLOCK_PROCESS_CPUTIME_ID), iterations())
            await Task.detached { await body() }.value
            guard let figure else { return }
            let each = { (total: UInt64) in String(format: "%.1f", Double(total) / Double(count)) }
            print("executors executor \(executor) loops \(loops) figure \(figure) count \(count) ns \(each(nanoseconds() - wall)) "
                + "cpu_ns \(each(nanoseconds(CLOCK_PROCESS_CPUTIME_ID) - cpu)) "
                + "iterations \(iterations() - loopIterations)")
        }
        // Warm-up, a tenth of each.
        await measure(nil, 0) { await pinger.run(roundTrips / 10) }
        await measure(nil, 0) { await fanOut(max(1, fanouts / 10), children: children) }
        await measure(nil, 0) { await mainActorRoundTrips(mainRoundTrips / 10) }

        await measure("actor", roundTrips) { await pinger.run(roundTrips) }
        await measure("fanout", fanouts * children) { await fanOut(fanouts, children: children) }
        await measure("mainactor", mainRoundTrips) { await mainActorRoundTrips(mainRoundTrips) }
        fflush(nil)
        exit(0)
    }
}
