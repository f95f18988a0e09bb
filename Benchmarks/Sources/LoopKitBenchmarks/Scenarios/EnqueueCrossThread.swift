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
enum EnqueueCrossThread {
    static let nioPeer = "NIO execute from another thread"
    static let dispatchPeer = "Dispatch serial async from another thread"

    static func run(_ options: Options, nio: MultiThreadedEventLoopGroup) throws -> [Row] {
        let n = options.count(1_000_000, quick: 100_000)

        let loop = try LoopKit.EventLoop()
        var comparison = Comparison(options)
        comparison.loopKit("LoopKit", operations: n) {
            benchCounter = 0
            let begin = Finish()
            let finish = Finish()
            // The producer starts once the loop is running (its first job ran).
            try loop.enqueue { begin.signal() }
            let producer = spawnThread {
                _ = begin.wait()
                let start = monotonicNanoseconds()
                for _ in 0..<n { try! loop.enqueue { benchCounter &+= 1 } }
                try! loop.enqueue {
                    finish.signal()
                    loop.stop()
                }
                startStamp.store(start, ordering: .releasing)
            }
            try loop.run()
            producer.wait()
            check(benchCounter == n, "LoopKit ran \(benchCounter) of \(n) jobs")
            return finish.wait() - startStamp.load(ordering: .acquiring)
        }

        let eventLoop = nio.next()
        comparison.peer(nioPeer, operations: n) {
            try eventLoop.submit { benchCounter = 0 }.wait()
            let finish = Finish()
            let start = monotonicNanoseconds()
            for _ in 0..<n { eventLoop.execute { benchCounter &+= 1 } }
            eventLoop.execute { finish.signal() }
            let end = finish.wait()
            try eventLoop.submit { check(benchCounter == n, "NIO ran \(benchCounter) of \(n) jobs") }.wait()
            return end - start
        }

        let queue = DispatchQueue(label: "bench.cross")
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
        let wakeUps = loop.wakeUpCount
        let iterations = loop.iteration
        loop.shutdown()
        return [
            Row(scenario: "cross-thread enqueue, one producer, 1M", unit: .nanoseconds, loopKit: figures["LoopKit"],
                peers: figures.peers(nioPeer, dispatchPeer),
                goal: .atMostNanoseconds(60),
                note: "Timed from the producer's first enqueue until the last job ran on the loop. Over all runs "
                    + "the loop took \(iterations) iterations and \(wakeUps) cross-thread wake-ups (R7: at most one "
                    + "per iteration)."),
        ]
    }
}

/// When the producer started, handed to the measuring thread.
private let startStamp = Atomic<UInt64>(0)
