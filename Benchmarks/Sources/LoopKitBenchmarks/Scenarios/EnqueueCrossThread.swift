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
/// Each is measured with three closure shapes (``Capture``): one object, as the goal's figure; an object
/// and a value, which makes Swift allocate a context per job on the producer's thread that the consumer's
/// thread frees; and nothing, the queue's own cost.
enum EnqueueCrossThread {
    /// What each measured job closure captures.
    enum Capture {
        /// Nothing: `{ benchCounter &+= 1 }` (a global). No allocation, no reference count.
        case nothing
        /// One object: `{ counter.value &+= 1 }`. Swift uses the object itself as the closure's context,
        /// so the job holds a reference on it: no allocation, but the producer retains and the consumer
        /// releases a count both threads share.
        case object
        /// An object and a value: `{ counter.value &+= step }`. Swift allocates a context per job (on the
        /// producer's thread) that the consumer's thread frees, as most callers' closures do.
        case objectAndValue

        var label: String {
            switch self {
            case .nothing: "captures nothing"
            case .object: "captures an object"
            case .objectAndValue: "captures an object and a value"
            }
        }
    }

    static func run(_ options: Options, nio: MultiThreadedEventLoopGroup) throws -> [Row] {
        let n = options.count(1_000_000, quick: 100_000)
        let loop = try LoopKit.EventLoop()
        let eventLoop = nio.next()
        let queue = DispatchQueue(label: "bench.cross")

        // Added LoopKit, peer, peer, LoopKit, …: the runs alternate.
        var comparison = Comparison(options)
        for capture in [Capture.object, .objectAndValue, .nothing] {
            comparison.loopKit("LoopKit, \(capture.label)", operations: n) { try loopKitRun(loop, n, capture) }
            comparison.peer("NIO execute from another thread, \(capture.label)", operations: n) {
                try nioRun(eventLoop, n, capture)
            }
            comparison.peer("Dispatch serial async from another thread, \(capture.label)", operations: n) {
                dispatchRun(queue, n, capture)
            }
        }

        let figures = try comparison.run()
        let wakeUps = loop.wakeUpCount
        let iterations = loop.iteration
        loop.shutdown()
        func peers(_ capture: Capture) -> [(name: String, figure: Figure)] {
            figures.peers("NIO execute from another thread, \(capture.label)",
                          "Dispatch serial async from another thread, \(capture.label)")
        }
        return [
            Row(scenario: "cross-thread enqueue, one producer, 1M, capturing an object", unit: .nanoseconds,
                loopKit: figures["LoopKit, \(Capture.object.label)"], peers: peers(.object),
                goal: .atMostNanosecondsAndTimesFaster(60, peer: "NIO execute from another thread, \(Capture.object.label)", ratio: 3),
                note: "Timed from the producer's first enqueue until the last job ran on the loop; each job "
                    + "closure captures a final class instance ({ counter.value &+= 1 }). Swift makes that "
                    + "object the closure's context: no allocation, but the producer retains it and the loop "
                    + "releases it, one count shared by both threads. Over all runs (all three rows) the loop "
                    + "took \(iterations) iterations and \(wakeUps) cross-thread wake-ups (R7: at most one per "
                    + "iteration)."),
            Row(scenario: "cross-thread enqueue, one producer, 1M, capturing an object and a value", unit: .nanoseconds,
                loopKit: figures["LoopKit, \(Capture.objectAndValue.label)"], peers: peers(.objectAndValue), goal: .none,
                note: "Each job closure captures the object and an Int ({ counter.value &+= step }): Swift "
                    + "allocates its context on the producer's thread, and the consumer's thread frees it "
                    + "(glibc's per-thread caches do not help a chunk freed by another thread)."),
            Row(scenario: "cross-thread enqueue, one producer, 1M, capturing nothing", unit: .nanoseconds,
                loopKit: figures["LoopKit, \(Capture.nothing.label)"], peers: peers(.nothing), goal: .none,
                note: "The same with closures that capture nothing (a global counter): no allocation, no "
                    + "reference count per job: the queue's own cost."),
        ]
    }

    /// LoopKit: `run()` on this thread while a producer thread enqueues `n` jobs and a last one that stops
    /// the clock and the loop.
    static func loopKitRun(_ loop: LoopKit.EventLoop, _ n: Int, _ capture: Capture) throws -> UInt64 {
        benchCounter = 0
        let counter = CapturedCounter()
        let step = stepOne(n)
        let begin = Finish()
        let finish = Finish()
        // The producer starts once the loop is running (its first job ran).
        try loop.enqueue { begin.signal() }
        let producer = spawnThread {
            _ = begin.wait()
            let start = monotonicNanoseconds()
            switch capture {
            case .nothing: for _ in 0..<n { try! loop.enqueue { benchCounter &+= 1 } }
            case .object: for _ in 0..<n { try! loop.enqueue { counter.value &+= 1 } }
            case .objectAndValue: for _ in 0..<n { try! loop.enqueue { counter.value &+= step } }
            }
            try! loop.enqueue {
                finish.signal()
                loop.stop()
            }
            startStamp.store(start, ordering: .releasing)
        }
        try loop.run()
        producer.wait()
        let ran = capture == .nothing ? benchCounter : counter.value
        check(ran == n, "LoopKit ran \(ran) of \(n) jobs")
        return finish.wait() - startStamp.load(ordering: .acquiring)
    }

    /// SwiftNIO: this thread `execute`s `n` jobs onto the NIO loop's thread, then one that stops the clock.
    static func nioRun(_ eventLoop: any NIOCore.EventLoop, _ n: Int, _ capture: Capture) throws -> UInt64 {
        try eventLoop.submit { benchCounter = 0 }.wait()
        let counter = CapturedCounter()
        let step = stepOne(n)
        let finish = Finish()
        let start = monotonicNanoseconds()
        switch capture {
        case .nothing: for _ in 0..<n { eventLoop.execute { benchCounter &+= 1 } }
        case .object: for _ in 0..<n { eventLoop.execute { counter.value &+= 1 } }
        case .objectAndValue: for _ in 0..<n { eventLoop.execute { counter.value &+= step } }
        }
        eventLoop.execute { finish.signal() }
        let end = finish.wait()
        try eventLoop.submit {
            let ran = capture == .nothing ? benchCounter : counter.value
            check(ran == n, "NIO ran \(ran) of \(n) jobs")
        }.wait()
        return end - start
    }

    /// Dispatch: this thread `async`s `n` jobs onto a serial queue, then one that stops the clock.
    static func dispatchRun(_ queue: DispatchQueue, _ n: Int, _ capture: Capture) -> UInt64 {
        queue.sync { benchCounter = 0 }
        let counter = CapturedCounter()
        let step = stepOne(n)
        let finish = Finish()
        let start = monotonicNanoseconds()
        switch capture {
        case .nothing: for _ in 0..<n { queue.async { benchCounter &+= 1 } }
        case .object: for _ in 0..<n { queue.async { counter.value &+= 1 } }
        case .objectAndValue: for _ in 0..<n { queue.async { counter.value &+= step } }
        }
        queue.async { finish.signal() }
        let end = finish.wait()
        queue.sync {
            let ran = capture == .nothing ? benchCounter : counter.value
            check(ran == n, "Dispatch ran \(ran) of \(n) jobs")
        }
        return end - start
    }

    /// 1, computed from a run-time value so the compiler cannot fold it into the closure: the closure must
    /// capture it (and so allocate a context).
    @inline(never)
    static func stepOne(_ n: Int) -> Int { n > 0 ? 1 : 2 }
}

/// When the LoopKit producer started, handed to the measuring thread (the harness runs one body at a time).
private let startStamp = Atomic<UInt64>(0)
