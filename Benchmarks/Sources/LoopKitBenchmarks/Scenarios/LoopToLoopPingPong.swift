import LoopKit
import NIOCore
import NIOPosix

/// Loop-to-loop ping-pong: two loops, each blocked in its poll, each enqueueing onto the other.
///
/// LoopKit: `b.enqueue { a.enqueue { … } }` between the two loops of a `LoopGroup(threads: 2)`.
/// SwiftNIO: `nb.execute { na.execute { … } }` between the two loops of a `MultiThreadedEventLoopGroup`.
/// No `invokeAndWait`, no spinning: every hop wakes a loop waiting in `epoll_wait`.
enum LoopToLoopPingPong {
    static let nioPeer = "NIO nb.execute { na.execute { … } }"

    static func run(_ options: Options) throws -> [Row] {
        let n = options.count(10_000, quick: 2_000)

        let group = try LoopGroup(threads: 2, name: "bench-pingpong")
        let (a, b) = (group.loops[0], group.loops[1])
        var comparison = Comparison(options)
        comparison.loopKit("LoopKit", operations: n) {
            let finish = Finish()
            @Sendable func serve(_ remaining: Int) {
                try! b.enqueue {
                    try! a.enqueue {
                        if remaining == 1 { finish.signal() } else { serve(remaining - 1) }
                    }
                }
            }
            let start = monotonicNanoseconds()
            try a.enqueue { serve(n) }
            return finish.wait() - start
        }

        let nioGroup = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        let loops = Array(nioGroup.makeIterator())
        let (na, nb) = (loops[0], loops[1])
        comparison.peer(nioPeer, operations: n) {
            let finish = Finish()
            @Sendable func serve(_ remaining: Int) {
                nb.execute {
                    na.execute {
                        if remaining == 1 { finish.signal() } else { serve(remaining - 1) }
                    }
                }
            }
            let start = monotonicNanoseconds()
            na.execute { serve(n) }
            return finish.wait() - start
        }

        let figures = try comparison.run()
        let wakeUps = a.wakeUpCount + b.wakeUpCount
        group.shutdown()
        try nioGroup.syncShutdownGracefully()
        return [
            Row(scenario: "loop-to-loop ping-pong round trip", unit: .microseconds, loopKit: figures["LoopKit"],
                peers: figures.peers(nioPeer), goal: .timesFaster(peer: nioPeer, ratio: 1.3),
                note: "\(n) round trips per run between two loops on their own threads, each blocked in its poll "
                    + "between hops (two cross-thread wake-ups per round trip; \(wakeUps) wake-ups over all runs)."),
        ]
    }
}
