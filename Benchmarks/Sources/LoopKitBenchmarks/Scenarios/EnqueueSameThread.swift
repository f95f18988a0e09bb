import Dispatch
import LoopKit
import NIOCore
import NIOPosix

/// Row 1: enqueue + run on the loop's own thread, 1M closures.
///
/// LoopKit: the loop thread enqueues 1M jobs, then one non-blocking `runOnce` drains them (the headline),
/// and, as an extra row, 1,000 jobs per iteration. SwiftNIO: from inside its loop, 1M `execute` and a
/// last one that stops the clock. Dispatch: 1M `async` onto a serial queue, then a last one.
///
/// Each is measured twice: with job closures that capture an object (``CapturedCounter``), as a caller's
/// closures do, so each closure allocates its context (the goal's figure); and with closures that capture
/// nothing (a global counter), which allocate nothing: the queue's own cost.
enum EnqueueSameThread {
    static let capturing = "LoopKit, captures an object"
    static let plain = "LoopKit, captures nothing"
    static let batched = "LoopKit, 1,000 per iteration, captures an object"
    static let nioCapturing = "NIO execute (inside its loop), captures an object"
    static let nioPlain = "NIO execute (inside its loop), captures nothing"
    static let dispatchCapturing = "Dispatch serial async, captures an object"
    static let dispatchPlain = "Dispatch serial async, captures nothing"

    static func run(_ options: Options, nio: MultiThreadedEventLoopGroup) throws -> [Row] {
        let n = options.count(1_000_000, quick: 100_000)
        let loop = try LoopKit.EventLoop()
        let eventLoop = nio.next()
        let queue = DispatchQueue(label: "bench.serial")

        // Added LoopKit, peer, peer, LoopKit, …: the runs alternate.
        var comparison = Comparison(options)
        comparison.loopKit(capturing, operations: n) { try loopKitAllAtOnce(loop, n, capturing: true) }
        comparison.peer(nioCapturing, operations: n) { try nioExecute(eventLoop, n, capturing: true) }
        comparison.peer(dispatchCapturing, operations: n) { dispatchAsync(queue, n, capturing: true) }
        comparison.loopKit(plain, operations: n) { try loopKitAllAtOnce(loop, n, capturing: false) }
        comparison.peer(nioPlain, operations: n) { try nioExecute(eventLoop, n, capturing: false) }
        comparison.peer(dispatchPlain, operations: n) { dispatchAsync(queue, n, capturing: false) }
        comparison.loopKit(batched, operations: n) { try loopKitBatched(loop, n) }

        let figures = try comparison.run()
        loop.shutdown()
        return [
            Row(scenario: "enqueue + run, same thread, 1M closures capturing an object", unit: .nanoseconds,
                loopKit: figures[capturing], peers: figures.peers(nioCapturing, dispatchCapturing),
                goal: .atMostNanoseconds(30),
                note: "1M enqueues then one runOnce(blocking: false); each job closure captures a final class "
                    + "instance ({ counter.value &+= 1 }), as callers' closures capture, so each allocates its "
                    + "context. Dispatch runs the jobs on a worker thread while the caller queues."),
            Row(scenario: "enqueue + run, same thread, 1M closures capturing nothing", unit: .nanoseconds,
                loopKit: figures[plain], peers: figures.peers(nioPlain, dispatchPlain), goal: .none,
                note: "The same with closures that capture nothing (they bump a global), so none allocates: "
                    + "the queue's own cost. Not the goal's figure: callers' closures capture."),
            Row(scenario: "enqueue + run, same thread, 1,000 per iteration", unit: .nanoseconds,
                loopKit: figures[batched], peers: figures.peers(nioCapturing), goal: .atMostNanoseconds(30),
                note: "1,000 enqueues of capturing closures then runOnce(blocking: false), 1,000 times: includes "
                    + "one I/O poll per 1,000 jobs."),
        ]
    }

    /// LoopKit: `n` enqueues on the loop's thread (this one), then one non-blocking iteration runs them.
    static func loopKitAllAtOnce(_ loop: LoopKit.EventLoop, _ n: Int, capturing: Bool) throws -> UInt64 {
        let counter = CapturedCounter()
        benchCounter = 0
        let start = monotonicNanoseconds()
        if capturing {
            for _ in 0..<n { try loop.enqueue { counter.value &+= 1 } }
        } else {
            for _ in 0..<n { try loop.enqueue { benchCounter &+= 1 } }
        }
        try loop.runOnce(blocking: false)
        let elapsed = monotonicNanoseconds() - start
        let ran = capturing ? counter.value : benchCounter
        check(ran == n, "LoopKit ran \(ran) of \(n) jobs")
        return elapsed
    }

    /// LoopKit: 1,000 capturing enqueues then one non-blocking iteration, `n / 1,000` times.
    static func loopKitBatched(_ loop: LoopKit.EventLoop, _ n: Int) throws -> UInt64 {
        let batch = 1_000
        let counter = CapturedCounter()
        let start = monotonicNanoseconds()
        for _ in 0..<(n / batch) {
            for _ in 0..<batch { try loop.enqueue { counter.value &+= 1 } }
            try loop.runOnce(blocking: false)
        }
        let elapsed = monotonicNanoseconds() - start
        check(counter.value == n / batch * batch, "LoopKit ran \(counter.value) of \(n) jobs")
        return elapsed
    }

    /// SwiftNIO: from inside its loop, `n` `execute`s and a last one that stops the clock.
    static func nioExecute(_ eventLoop: any NIOCore.EventLoop, _ n: Int, capturing: Bool) throws -> UInt64 {
        let finish = Finish()
        let counter = CapturedCounter()
        let started = try eventLoop.submit { () -> UInt64 in
            benchCounter = 0
            let start = monotonicNanoseconds()
            if capturing {
                for _ in 0..<n { eventLoop.execute { counter.value &+= 1 } }
            } else {
                for _ in 0..<n { eventLoop.execute { benchCounter &+= 1 } }
            }
            eventLoop.execute { finish.signal() }
            return start
        }.wait()
        let end = finish.wait()
        try eventLoop.submit {
            let ran = capturing ? counter.value : benchCounter
            check(ran == n, "NIO ran \(ran) of \(n) jobs")
        }.wait()
        return end - started
    }

    /// Dispatch: `n` `async`s onto a serial queue, then a last one that stops the clock.
    static func dispatchAsync(_ queue: DispatchQueue, _ n: Int, capturing: Bool) -> UInt64 {
        let counter = CapturedCounter()
        queue.sync { benchCounter = 0 }
        let finish = Finish()
        let start = monotonicNanoseconds()
        if capturing {
            for _ in 0..<n { queue.async { counter.value &+= 1 } }
        } else {
            for _ in 0..<n { queue.async { benchCounter &+= 1 } }
        }
        queue.async { finish.signal() }
        let end = finish.wait()
        queue.sync {
            let ran = capturing ? counter.value : benchCounter
            check(ran == n, "Dispatch ran \(ran) of \(n) jobs")
        }
        return end - start
    }
}
