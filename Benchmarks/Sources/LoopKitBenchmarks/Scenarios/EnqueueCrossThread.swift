import Dispatch
import Synchronization
import LoopKit
import NIOCore
import NIOPosix

/// Row 3: cross-thread enqueue, one producer, 1M jobs.
///
/// LoopKit: the loop runs `run()` on this thread while a producer thread enqueues 1M jobs and a last one
/// that stops the clock and the loop; timed from the producer's start until that last job ran. SwiftNIO:
/// this thread `execute`s onto a NIO loop's thread. Dispatch: this thread `async`s onto a serial queue.
///
/// Each is measured with job closures that capture an object (``CapturedCounter``), as a caller's do, so
/// each allocates its context on the producer's thread and frees it on the consumer's (the goal's
/// figure), and with closures that capture nothing (a global counter), which allocate nothing.
enum EnqueueCrossThread {
    static let capturing = "LoopKit, captures an object"
    static let plain = "LoopKit, captures nothing"
    static let nioCapturing = "NIO execute from another thread, captures an object"
    static let nioPlain = "NIO execute from another thread, captures nothing"
    static let dispatchCapturing = "Dispatch serial async from another thread, captures an object"
    static let dispatchPlain = "Dispatch serial async from another thread, captures nothing"

    static func run(_ options: Options, nio: MultiThreadedEventLoopGroup) throws -> [Row] {
        let n = options.count(1_000_000, quick: 100_000)
        let loop = try LoopKit.EventLoop()
        let eventLoop = nio.next()
        let queue = DispatchQueue(label: "bench.cross")

        // Added LoopKit, peer, peer, LoopKit, …: the runs alternate.
        var comparison = Comparison(options)
        comparison.loopKit(capturing, operations: n) { try loopKitRun(loop, n, capturing: true) }
        comparison.peer(nioCapturing, operations: n) { try nioRun(eventLoop, n, capturing: true) }
        comparison.peer(dispatchCapturing, operations: n) { dispatchRun(queue, n, capturing: true) }
        comparison.loopKit(plain, operations: n) { try loopKitRun(loop, n, capturing: false) }
        comparison.peer(nioPlain, operations: n) { try nioRun(eventLoop, n, capturing: false) }
        comparison.peer(dispatchPlain, operations: n) { dispatchRun(queue, n, capturing: false) }

        let figures = try comparison.run()
        let wakeUps = loop.wakeUpCount
        let iterations = loop.iteration
        loop.shutdown()
        return [
            Row(scenario: "cross-thread enqueue, one producer, 1M, capturing an object", unit: .nanoseconds,
                loopKit: figures[capturing], peers: figures.peers(nioCapturing, dispatchCapturing),
                goal: .atMostNanosecondsAndTimesFaster(60, peer: nioCapturing, ratio: 3),
                note: "Timed from the producer's first enqueue until the last job ran on the loop; each job "
                    + "closure captures a final class instance ({ counter.value &+= 1 }), as callers' closures "
                    + "do: allocated on the producer's thread, freed on the loop's. Over all runs (both rows) "
                    + "the loop took \(iterations) iterations and \(wakeUps) cross-thread wake-ups (R7: at most "
                    + "one per iteration)."),
            Row(scenario: "cross-thread enqueue, one producer, 1M, capturing nothing", unit: .nanoseconds,
                loopKit: figures[plain], peers: figures.peers(nioPlain, dispatchPlain), goal: .none,
                note: "The same with closures that capture nothing (a global counter): no allocation per job, "
                    + "the queue's own cost. Not the goal's figure: callers' closures capture."),
        ]
    }

    /// LoopKit: `run()` on this thread while a producer thread enqueues `n` jobs and a last one that stops
    /// the clock and the loop.
    static func loopKitRun(_ loop: LoopKit.EventLoop, _ n: Int, capturing: Bool) throws -> UInt64 {
        benchCounter = 0
        let counter = CapturedCounter()
        let begin = Finish()
        let finish = Finish()
        // The producer starts once the loop is running (its first job ran).
        try loop.enqueue { begin.signal() }
        let producer = spawnThread {
            _ = begin.wait()
            let start = monotonicNanoseconds()
            if capturing {
                for _ in 0..<n { try! loop.enqueue { counter.value &+= 1 } }
            } else {
                for _ in 0..<n { try! loop.enqueue { benchCounter &+= 1 } }
            }
            try! loop.enqueue {
                finish.signal()
                loop.stop()
            }
            startStamp.store(start, ordering: .releasing)
        }
        try loop.run()
        producer.wait()
        let ran = capturing ? counter.value : benchCounter
        check(ran == n, "LoopKit ran \(ran) of \(n) jobs")
        return finish.wait() - startStamp.load(ordering: .acquiring)
    }

    /// SwiftNIO: this thread `execute`s `n` jobs onto the NIO loop's thread, then one that stops the clock.
    static func nioRun(_ eventLoop: any NIOCore.EventLoop, _ n: Int, capturing: Bool) throws -> UInt64 {
        try eventLoop.submit { benchCounter = 0 }.wait()
        let counter = CapturedCounter()
        let finish = Finish()
        let start = monotonicNanoseconds()
        if capturing {
            for _ in 0..<n { eventLoop.execute { counter.value &+= 1 } }
        } else {
            for _ in 0..<n { eventLoop.execute { benchCounter &+= 1 } }
        }
        eventLoop.execute { finish.signal() }
        let end = finish.wait()
        try eventLoop.submit {
            let ran = capturing ? counter.value : benchCounter
            check(ran == n, "NIO ran \(ran) of \(n) jobs")
        }.wait()
        return end - start
    }

    /// Dispatch: this thread `async`s `n` jobs onto a serial queue, then one that stops the clock.
    static func dispatchRun(_ queue: DispatchQueue, _ n: Int, capturing: Bool) -> UInt64 {
        queue.sync { benchCounter = 0 }
        let counter = CapturedCounter()
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

/// When the LoopKit producer started, handed to the measuring thread (the harness runs one body at a time).
private let startStamp = Atomic<UInt64>(0)
