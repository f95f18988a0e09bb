import Dispatch
import Foundation
import LoopKit
import NIOCore
import NIOPosix

// `--callgrind TARGET N`: one side of one CPU-bound row (or CPU-bound part of one, as the step sequence's
// build), run untimed for N operations, for
// `Benchmarks/callgrind.sh` to count its instructions under `valgrind --tool=callgrind`. The script runs
// each target for N and for 2N operations and divides the difference by N, so the process's start-up and
// the target's set-up (the same in both runs) cancel out. Instruction counts do not move with the load of
// a shared machine, so these figures repeat where the timed ones swing.

/// One side of one CPU-bound row.
struct CallgrindTarget: Sendable {
    /// `row/side`, as given to `--callgrind`.
    let name: String
    /// The row, as `callgrind.sh` prints it.
    let row: String
    /// Who runs: LoopKit or the peer's name.
    let side: String
    /// The default N (the script also runs 2N).
    let operations: Int
    /// Runs `operations` operations.
    let body: @Sendable (_ operations: Int) throws -> Void
}

enum Callgrind {
    static let targets: [CallgrindTarget] = [
        CallgrindTarget(name: "enqueue-capture/loopkit", row: "enqueue + run, same thread, capturing an object",
                        side: "LoopKit", operations: 200_000) { n in
            let loop = try LoopKit.EventLoop()
            _ = try EnqueueSameThread.loopKitAllAtOnce(loop, n, capturing: true)
            loop.shutdown()
        },
        CallgrindTarget(name: "enqueue-capture/nio", row: "enqueue + run, same thread, capturing an object",
                        side: "NIO execute", operations: 200_000) { n in
            try withNIOLoop { _ = try EnqueueSameThread.nioExecute($0, n, capturing: true) }
        },
        CallgrindTarget(name: "enqueue-capture/dispatch", row: "enqueue + run, same thread, capturing an object",
                        side: "Dispatch serial async", operations: 200_000) { n in
            _ = EnqueueSameThread.dispatchAsync(DispatchQueue(label: "callgrind.serial"), n, capturing: true)
        },
        CallgrindTarget(name: "enqueue-plain/loopkit", row: "enqueue + run, same thread, capturing nothing",
                        side: "LoopKit", operations: 200_000) { n in
            let loop = try LoopKit.EventLoop()
            _ = try EnqueueSameThread.loopKitAllAtOnce(loop, n, capturing: false)
            loop.shutdown()
        },
        CallgrindTarget(name: "enqueue-plain/nio", row: "enqueue + run, same thread, capturing nothing",
                        side: "NIO execute", operations: 200_000) { n in
            try withNIOLoop { _ = try EnqueueSameThread.nioExecute($0, n, capturing: false) }
        },
        CallgrindTarget(name: "enqueue-plain/dispatch", row: "enqueue + run, same thread, capturing nothing",
                        side: "Dispatch serial async", operations: 200_000) { n in
            _ = EnqueueSameThread.dispatchAsync(DispatchQueue(label: "callgrind.serial"), n, capturing: false)
        },
        CallgrindTarget(name: "chain/loopkit", row: "one item per iteration (LoopKit polls, NIO does not)",
                        side: "LoopKit", operations: 50_000) { n in
            let loop = try LoopKit.EventLoop()
            _ = try ChainOnePerIteration.loopKitChain(loop, n)
            loop.shutdown()
        },
        CallgrindTarget(name: "chain/nio", row: "one item per iteration (LoopKit polls, NIO does not)",
                        side: "NIO execute chain", operations: 50_000) { n in
            try withNIOLoop { _ = try ChainOnePerIteration.nioChain($0, n) }
        },
        CallgrindTarget(name: "timers/loopkit", row: "timers, schedule + fire", side: "LoopKit",
                        operations: 100_000) { n in
            let loop = try LoopKit.EventLoop()
            _ = try TimersScheduleAndFire.loopKitTimers(loop, n)
            loop.shutdown()
        },
        CallgrindTarget(name: "timers/nio", row: "timers, schedule + fire", side: "NIO scheduleTask(in:)",
                        operations: 100_000) { n in
            try withNIOLoop { _ = try TimersScheduleAndFire.nioTimers($0, n) }
        },
        CallgrindTarget(name: "progress/loopkit", row: "progress increments, one observer",
                        side: "LoopKit, iteration every 10,000", operations: 400_000) { n in
            let loop = try LoopKit.EventLoop()
            _ = try ProgressIncrements.loopKitIncrements(loop, n, every: 10_000)
            loop.shutdown()
        },
        CallgrindTarget(name: "progress/foundation", row: "progress increments, one observer",
                        side: "Foundation Progress", operations: 400_000) { n in
            _ = ProgressIncrements.foundationIncrements(n)
        },
        CallgrindTarget(name: "steps-build/loopkit", row: "step sequence, building, per step", side: "LoopKit",
                        operations: 50_000) { n in
            let group = try LoopGroup(threads: 2, name: "callgrind-steps")
            withExtendedLifetime(StepSequenceChain.buildLoopKit(group.loops[0], group.loops[1], n, Finish())) {}
            group.shutdown()
        },
        // Built, never started or fulfilled, on both sides: the figures are the build alone.
        CallgrindTarget(name: "steps-build/nio-hop", row: "step sequence, building, per step",
                        side: "NIO hop(B).map.hop(A) chain", operations: 50_000) { n in
            try withNIOLoops { a, b in _ = try StepSequenceChain.buildHopChain(a, b, n, Finish()) }
        },
        CallgrindTarget(name: "steps-build/nio-flatmap", row: "step sequence, building, per step",
                        side: "NIO flatMap chain", operations: 50_000) { n in
            try withNIOLoops { a, b in _ = try StepSequenceChain.buildFlatMapChain(a, b, n, Finish()) }
        },
        CallgrindTarget(name: "diff/loopkit", row: "diff 10k items, -1k/+1k/200 moved (per diff)", side: "LoopKit Diff",
                        operations: 4) { n in
            let (old, new) = DiffBenchmark.shape(count: 10_000, seed: 0xD1FF)
            for _ in 0..<n { check(Diff(from: old, to: new).insertions.count == 1_000, "unexpected 10k diff") }
        },
        CallgrindTarget(name: "diff/stdlib", row: "diff 10k items, -1k/+1k/200 moved (per diff)",
                        side: "stdlib difference + inferringMoves", operations: 1) { n in
            let (old, new) = DiffBenchmark.shape(count: 10_000, seed: 0xD1FF)
            for _ in 0..<n { check(old.applying(new.difference(from: old).inferringMoves()) == new, "stdlib diff does not apply") }
        },
    ]

    /// Runs the target `--callgrind` named for its N operations, or lists the targets; then exits.
    static func main(_ options: Options) -> Never {
        if options.callgrindList {
            for target in targets { print("\(target.name)\t\(target.operations)\t\(target.row)\t\(target.side)") }
            exit(0)
        }
        guard let (name, operations) = options.callgrind else { exit(2) }
        guard let target = targets.first(where: { $0.name == name }) else {
            FileHandle.standardError.write(Data("error: no callgrind target \(name) (see --callgrind-list)\n".utf8))
            exit(2)
        }
        do {
            try target.body(operations)
        } catch {
            FileHandle.standardError.write(Data("error: \(name) failed: \(error)\n".utf8))
            exit(1)
        }
        exit(0)
    }

    /// Runs `body` with the two loops of a fresh two-thread NIO group, then shuts the group down.
    private static func withNIOLoops(_ body: (any NIOCore.EventLoop, any NIOCore.EventLoop) throws -> Void) throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        let loops = Array(group.makeIterator())
        try body(loops[0], loops[1])
        try group.syncShutdownGracefully()
    }

    /// Runs `body` with the one loop of a fresh one-thread NIO group, then shuts the group down.
    private static func withNIOLoop(_ body: (any NIOCore.EventLoop) throws -> Void) throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        try body(group.next())
        try group.syncShutdownGracefully()
    }
}
