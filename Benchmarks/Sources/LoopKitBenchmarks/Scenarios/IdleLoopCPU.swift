import Foundation
import LoopKit
import NIOCore
import NIOPosix

/// The idle-loop row: the CPU time two idle loops use over 10 s, right after a loop-to-loop conversation.
///
/// A loop whose recent waits were ended quickly by another thread's job spins briefly before its next
/// wait (LoopKit's wake spin). This row checks the other half of that bargain: once the conversation
/// stops, the loops go back to waiting in their polls and use no CPU. Each group first runs 10,000
/// ping-pong round trips (the conversation that turns spinning on), then both loops are left idle;
/// each loop thread's CPU time (`CLOCK_THREAD_CPUTIME_ID`, read on the loop) is taken before and after.
/// SwiftNIO's two loops are measured the same way, for reference.
enum IdleLoopCPU {
    static let nio = "NIO, two idle loops after the same ping-pong"

    static func run(_ options: Options) throws -> [Row] {
        let seconds: UInt32 = options.quick ? 1 : 10

        let group = try LoopGroup(threads: 2, name: "bench-idle")
        _ = try LoopToLoopPingPong.loopKitPingPong(group.loops[0], group.loops[1], 10_000)
        let before = try group.loops.map { try $0.invokeAndWait { threadCPUNanoseconds() } }
        sleep(seconds)
        let after = try group.loops.map { try $0.invokeAndWait { threadCPUNanoseconds() } }
        group.shutdown()
        let loopKit = Double(zip(after, before).map { $0 - $1 }.reduce(0, +))

        var peers: [(name: String, figure: Figure)] = []
        if options.peers {
            let nioGroup = MultiThreadedEventLoopGroup(numberOfThreads: 2)
            let loops = Array(nioGroup.makeIterator())
            _ = LoopToLoopPingPong.nioPingPong(loops[0], loops[1], 10_000)
            let nioBefore = try loops.map { try $0.submit { threadCPUNanoseconds() }.wait() }
            sleep(seconds)
            let nioAfter = try loops.map { try $0.submit { threadCPUNanoseconds() }.wait() }
            try nioGroup.syncShutdownGracefully()
            let cpu = Double(zip(nioAfter, nioBefore).map { $0 - $1 }.reduce(0, +))
            peers.append((name: nio, figure: Figure(median: cpu, samples: [cpu])))
        }
        return [
            Row(scenario: "CPU of two idle loops over \(seconds) s, after a ping-pong", unit: .microseconds,
                loopKit: Figure(median: loopKit, samples: [loopKit]), peers: peers, goal: .atMostNanoseconds(1_000_000),
                note: "Two loops of a LoopGroup(threads: 2) after 10,000 ping-pong round trips (which turn the wake "
                    + "spin on), then idle for \(seconds) s: the loop threads' CPU time (CLOCK_THREAD_CPUTIME_ID) "
                    + "summed, the two reading invokes included. Goal: an idle loop uses no CPU (≤ 1 ms in all)."),
        ]
    }

    /// The calling thread's CPU time in nanoseconds.
    static func threadCPUNanoseconds() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }
}
