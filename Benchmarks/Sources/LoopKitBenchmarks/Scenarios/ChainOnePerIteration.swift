import Foundation
import LoopKit
import NIOCore
import NIOPosix

/// Row 2: one item per iteration, with a real I/O poll between.
///
/// LoopKit: a chain of 200k jobs, each enqueuing the next (so each runs in its own iteration, R3), driven
/// by `run()`; the loop watches one descriptor (a pipe's read end, never readable), as a program's loop watches
/// its sockets, so every iteration polls I/O (`epoll_wait` with a zero timeout; a loop that watches nothing
/// skips that poll). The last job stops the loop.
/// Foundation: a chain of `RunLoop.perform` blocks driven by `RunLoop.run(mode:before:)`. SwiftNIO: a
/// chain of `execute` (NIO runs tasks queued while it runs tasks without polling between).
enum ChainOnePerIteration {
    static let runLoopBlockingPeer = "RunLoop.perform, run(before: +10 ms)"
    static let runLoopSpinningPeer = "RunLoop.perform, run(before: now), spinning"
    static let nioPeer = "NIO execute chain (no poll between)"

    static func run(_ options: Options, nio: MultiThreadedEventLoopGroup) throws -> [Row] {
        let n = options.count(200_000, quick: 20_000)

        let loop = try LoopKit.EventLoop()
        var comparison = Comparison(options)
        comparison.loopKit("LoopKit", operations: n) { try loopKitChain(loop, n) }

        // Foundation's RunLoop.perform does not wake a waiting run loop on Linux: each wait runs to its
        // deadline. 10 ms is a deadline a UI-style loop might wait for input; CF runs the block list twice
        // per pass (before and after the wait), so a chain moves two blocks per deadline.
        let runLoopItems = options.count(200, quick: 20)
        comparison.peer(runLoopBlockingPeer, operations: runLoopItems) {
            runLoopChain(items: runLoopItems) { Date(timeIntervalSinceNow: 0.010) }
        }
        let spinItems = options.count(20_000, quick: 2_000)
        comparison.peer(runLoopSpinningPeer, operations: spinItems) {
            runLoopChain(items: spinItems) { Date() }
        }

        let eventLoop = nio.next()
        comparison.peer(nioPeer, operations: n) { try nioChain(eventLoop, n) }

        let figures = try comparison.run()
        loop.shutdown()
        return [
            Row(scenario: "one item per iteration, with a real I/O poll between", unit: .nanoseconds,
                loopKit: figures["LoopKit"],
                peers: figures.peers(runLoopBlockingPeer, runLoopSpinningPeer, nioPeer),
                goal: .atMostNanoseconds(1_000),
                note: "LoopKit: \(n) jobs, each enqueuing the next, under run(), the loop watching a pipe; each is "
                    + "one iteration with an epoll_wait(timeout 0). RunLoop: \(runLoopItems) blocks waiting up to 10 ms per run call "
                    + "(perform does not wake the loop on Linux), and \(spinItems) blocks with a busy-polling "
                    + "driver that burns the core."),
        ]
    }

    /// LoopKit: a chain of `n` jobs, each enqueuing the next, under `run()`; returns the elapsed nanoseconds.
    static func loopKitChain(_ loop: LoopKit.EventLoop, _ n: Int) throws -> UInt64 {
        var ends: [Int32] = [0, 0]
        check(pipe(&ends) == 0, "pipe() failed")
        let watch = try loop.watch(ends[0], for: .readable) { _ in }
        defer {
            watch.cancel()
            close(ends[0])
            close(ends[1])
        }
        chainLoop = loop
        defer { chainLoop = nil }
        chainRemaining = n
        let startIteration = loop.iteration
        let start = monotonicNanoseconds()
        try loop.enqueue(loopKitStep)
        try loop.run()
        let elapsed = monotonicNanoseconds() - start
        check(chainRemaining == 0, "LoopKit chain stopped with \(chainRemaining) left")
        check(loop.iteration - startIteration >= UInt64(n), "LoopKit chain ran in fewer than \(n) iterations")
        return elapsed
    }

    /// SwiftNIO: a chain of `n` `execute`s on its loop, started from this thread; returns the elapsed
    /// nanoseconds.
    static func nioChain(_ eventLoop: any NIOCore.EventLoop, _ n: Int) throws -> UInt64 {
        let finish = Finish()
        nioChainLoop = eventLoop
        nioChainFinish = finish
        defer { (nioChainLoop, nioChainFinish) = (nil, nil) }
        let start = try eventLoop.submit { () -> UInt64 in
            chainRemaining = n
            let start = monotonicNanoseconds()
            eventLoop.execute(nioStep)
            return start
        }.wait()
        return finish.wait() - start
    }

    /// Runs a chain of `items` RunLoop.perform blocks on this thread; returns the elapsed nanoseconds.
    private static func runLoopChain(items: Int, deadline: () -> Date) -> UInt64 {
        chainRemaining = items
        let runLoop = RunLoop.current
        let start = monotonicNanoseconds()
        runLoop.perform(runLoopStep)
        while chainRemaining > 0 {
            _ = runLoop.run(mode: .default, before: deadline())
        }
        return monotonicNanoseconds() - start
    }
}

// The chains' state lives in globals so each step is a plain function: enqueuing it allocates nothing.
nonisolated(unsafe) private var chainRemaining = 0
nonisolated(unsafe) private var chainLoop: LoopKit.EventLoop?
nonisolated(unsafe) private var nioChainLoop: (any NIOCore.EventLoop)?
nonisolated(unsafe) private var nioChainFinish: Finish?

@Sendable private func loopKitStep() {
    chainRemaining -= 1
    if chainRemaining == 0 {
        chainLoop!.stop()
    } else {
        try! chainLoop!.enqueue(loopKitStep)
    }
}

@Sendable private func nioStep() {
    chainRemaining -= 1
    if chainRemaining == 0 {
        nioChainFinish!.signal()
    } else {
        nioChainLoop!.execute(nioStep)
    }
}

@Sendable private func runLoopStep() {
    chainRemaining -= 1
    if chainRemaining > 0 { RunLoop.current.perform(runLoopStep) }
}
