import LoopKit
import NIOCore
import NIOPosix

/// Loop-to-loop ping-pong: two loops, each blocked in its poll, each enqueueing onto the other.
///
/// LoopKit: `b.enqueue { a.enqueue { … } }` between the two loops of a `LoopGroup(threads: 2)`.
/// SwiftNIO: `nb.execute { na.execute { … } }` between the two loops of a `MultiThreadedEventLoopGroup`.
/// No `invokeAndWait`, no spinning: every hop wakes a loop waiting in `epoll_wait`. Each hop's closure
/// captures objects (the `Finish` signal, the other loop), as a caller's would.
///
/// Two shapes, alternated in the same rounds:
/// - warm: one group of each kept across the runs (after a warm-up run), as a server keeps its loops;
/// - fresh: a new `LoopGroup` / `MultiThreadedEventLoopGroup` made for each run (its thread start-up and
///   shutdown outside the clock), as a short-lived tool or test would.
enum LoopToLoopPingPong {
    static let warm = "LoopKit, warm threads"
    static let fresh = "LoopKit, fresh threads"
    static let nioWarm = "NIO nb.execute { na.execute { … } }, warm threads"
    static let nioFresh = "NIO nb.execute { na.execute { … } }, fresh threads"

    static func run(_ options: Options) throws -> [Row] {
        let n = options.count(10_000, quick: 2_000)

        let group = try LoopGroup(threads: 2, name: "bench-pingpong")
        let nioGroup = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        let nioLoops = Array(nioGroup.makeIterator())

        // Added LoopKit, peer, LoopKit, peer: the runs alternate.
        var comparison = Comparison(options)
        comparison.loopKit(warm, operations: n) { try loopKitPingPong(group.loops[0], group.loops[1], n) }
        comparison.peer(nioWarm, operations: n) { nioPingPong(nioLoops[0], nioLoops[1], n) }
        comparison.loopKit(fresh, operations: n) {
            let freshGroup = try LoopGroup(threads: 2, name: "bench-pingpong-fresh")
            defer { freshGroup.shutdown() }
            return try loopKitPingPong(freshGroup.loops[0], freshGroup.loops[1], n)
        }
        comparison.peer(nioFresh, operations: n) {
            let freshGroup = MultiThreadedEventLoopGroup(numberOfThreads: 2)
            defer { try! freshGroup.syncShutdownGracefully() }
            let loops = Array(freshGroup.makeIterator())
            return nioPingPong(loops[0], loops[1], n)
        }

        let figures = try comparison.run()
        let wakeUps = group.loops[0].wakeUpCount + group.loops[1].wakeUpCount
        group.shutdown()
        try nioGroup.syncShutdownGracefully()
        let how = "\(n) round trips per run between two loops on their own threads, each blocked in its poll "
            + "between hops (two cross-thread wake-ups per round trip)"
        return [
            Row(scenario: "loop-to-loop ping-pong round trip, fresh threads", unit: .microseconds,
                loopKit: figures[fresh], peers: figures.peers(nioFresh), goal: .timesFaster(peer: nioFresh, ratio: 1.0),
                note: "\(how); a new LoopGroup(threads: 2) and MultiThreadedEventLoopGroup(numberOfThreads: 2) "
                    + "each run, their start-up and shutdown untimed."),
            Row(scenario: "loop-to-loop ping-pong round trip, warm threads", unit: .microseconds,
                loopKit: figures[warm], peers: figures.peers(nioWarm), goal: .timesFaster(peer: nioWarm, ratio: 1.3),
                note: "\(how); one group of each kept across all runs after a warm-up run (\(wakeUps) LoopKit "
                    + "wake-ups over all warm runs)."),
        ]
    }

    /// `n` round trips `a → b → a`, started and timed from this thread.
    static func loopKitPingPong(_ a: LoopKit.EventLoop, _ b: LoopKit.EventLoop, _ n: Int) throws -> UInt64 {
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

    /// The same on two NIO loops.
    static func nioPingPong(_ na: any NIOCore.EventLoop, _ nb: any NIOCore.EventLoop, _ n: Int) -> UInt64 {
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
}
