import Dispatch
import LoopKit
import NIOCore
import NIOPosix

/// Row 4: cross-thread invoke round trip.
///
/// This thread calls into a loop running on a thread of its own and waits for the answer, 10k times.
/// LoopKit: `invokeAndWait { 1 }` onto a `LoopGroup(threads: 1)` loop. SwiftNIO: `submit { 1 }.wait()`.
/// Dispatch: `sync { 1 }` on a serial queue (which runs the block on the calling thread when the queue is
/// idle: no thread hop, so it is a lower bound rather than a round trip).
enum InvokeRoundTrip {
    static let nioPeer = "NIO submit { 1 }.wait()"
    static let dispatchPeer = "Dispatch serial sync { 1 }"

    static func run(_ options: Options, nio: MultiThreadedEventLoopGroup) throws -> [Row] {
        let n = options.count(10_000, quick: 1_000)

        let group = try LoopGroup(threads: 1)
        let loop = group.next()
        var comparison = Comparison(options)
        comparison.loopKit("LoopKit", operations: n) {
            var sum = 0
            let start = monotonicNanoseconds()
            for _ in 0..<n { sum &+= try loop.invokeAndWait { 1 } }
            let elapsed = monotonicNanoseconds() - start
            check(sum == n, "LoopKit answered \(sum) of \(n)")
            return elapsed
        }

        let eventLoop = nio.next()
        comparison.peer(nioPeer, operations: n) {
            var sum = 0
            let start = monotonicNanoseconds()
            for _ in 0..<n { sum &+= try eventLoop.submit { 1 }.wait() }
            let elapsed = monotonicNanoseconds() - start
            check(sum == n, "NIO answered \(sum) of \(n)")
            return elapsed
        }

        let queue = DispatchQueue(label: "bench.sync")
        comparison.peer(dispatchPeer, operations: n) {
            var sum = 0
            let start = monotonicNanoseconds()
            for _ in 0..<n { sum &+= queue.sync { 1 } }
            let elapsed = monotonicNanoseconds() - start
            check(sum == n, "Dispatch answered \(sum) of \(n)")
            return elapsed
        }

        let figures = try comparison.run()
        group.shutdown()
        return [
            Row(scenario: "cross-thread invoke round trip", unit: .microseconds, loopKit: figures["LoopKit"],
                peers: figures.peers(nioPeer, dispatchPeer),
                goal: .noSlowerThan(peer: nioPeer),
                note: "\(n) round trips from a non-loop thread to a loop blocked in its poll. Dispatch's sync runs "
                    + "the block on the caller's thread when the queue is idle, so it never hops threads."),
        ]
    }
}
