import Dispatch
import LoopKit
import NIOCore
import NIOPosix

/// Row 1: enqueue + run on the loop's own thread, 1M closures.
///
/// LoopKit: the loop thread enqueues 1M jobs, then one non-blocking `runOnce` drains them (the headline),
/// and, as an extra row, 1,000 jobs per iteration. SwiftNIO: from inside its loop, 1M `execute` and a
/// last one that stops the clock. Dispatch: 1M `async` onto a serial queue, then a last one.
/// Every job bumps a global counter, so the closures capture nothing and allocate nothing.
enum EnqueueSameThread {
    static let allAtOnce = "LoopKit, all at once"
    static let batched = "LoopKit, 1,000 per iteration"
    static let nioPeer = "NIO execute (inside its loop)"
    static let dispatchPeer = "Dispatch serial async"

    static func run(_ options: Options, nio: MultiThreadedEventLoopGroup) throws -> [Row] {
        let n = options.count(1_000_000, quick: 100_000)
        let loop = try LoopKit.EventLoop()
        var comparison = Comparison(options)

        comparison.loopKit(allAtOnce, operations: n) {
            benchCounter = 0
            let start = monotonicNanoseconds()
            for _ in 0..<n { try loop.enqueue { benchCounter &+= 1 } }
            try loop.runOnce(blocking: false)
            let elapsed = monotonicNanoseconds() - start
            check(benchCounter == n, "LoopKit ran \(benchCounter) of \(n) jobs")
            return elapsed
        }

        let batch = 1_000
        comparison.loopKit(batched, operations: n) {
            benchCounter = 0
            let start = monotonicNanoseconds()
            for _ in 0..<(n / batch) {
                for _ in 0..<batch { try loop.enqueue { benchCounter &+= 1 } }
                try loop.runOnce(blocking: false)
            }
            let elapsed = monotonicNanoseconds() - start
            check(benchCounter == n, "LoopKit ran \(benchCounter) of \(n) jobs")
            return elapsed
        }

        let eventLoop = nio.next()
        comparison.peer(nioPeer, operations: n) {
            let finish = Finish()
            let started = try eventLoop.submit { () -> UInt64 in
                benchCounter = 0
                let start = monotonicNanoseconds()
                for _ in 0..<n { eventLoop.execute { benchCounter &+= 1 } }
                eventLoop.execute { finish.signal() }
                return start
            }.wait()
            let end = finish.wait()
            try eventLoop.submit { check(benchCounter == n, "NIO ran \(benchCounter) of \(n) jobs") }.wait()
            return end - started
        }

        let queue = DispatchQueue(label: "bench.serial")
        comparison.peer(dispatchPeer, operations: n) {
            queue.sync { benchCounter = 0 }
            let finish = Finish()
            let start = monotonicNanoseconds()
            for _ in 0..<n { queue.async { benchCounter &+= 1 } }
            queue.async { finish.signal() }
            let end = finish.wait()
            queue.sync { check(benchCounter == n, "Dispatch ran \(benchCounter) of \(n) jobs") }
            return end - start
        }

        let figures = try comparison.run()
        loop.shutdown()
        return [
            Row(scenario: "enqueue + run, same thread, 1M closures", unit: .nanoseconds, loopKit: figures[allAtOnce],
                peers: figures.peers(nioPeer, dispatchPeer), goal: .atMostNanoseconds(30),
                note: "1M enqueues then one runOnce(blocking: false). The job closures capture nothing (a global "
                    + "counter), so none allocates; a closure that captures a reference adds one context allocation "
                    + "per job, the closure's own. Dispatch runs the jobs on a worker thread while the caller queues."),
            Row(scenario: "enqueue + run, same thread, 1,000 per iteration", unit: .nanoseconds,
                loopKit: figures[batched], peers: figures.peers(nioPeer), goal: .atMostNanoseconds(30),
                note: "1,000 enqueues then runOnce(blocking: false), 1,000 times: includes one I/O poll per 1,000 jobs."),
        ]
    }
}
