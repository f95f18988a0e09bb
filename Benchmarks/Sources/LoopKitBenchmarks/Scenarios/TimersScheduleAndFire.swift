import LoopKit
import NIOCore
import NIOPosix

/// Row 5: 1M one-shot timers, scheduled from the loop thread and run until all fired.
///
/// Delays are spread over 0–999 ns (`i % 1000`), so the heap sees many distinct deadlines. LoopKit:
/// `schedule(after:)` ×1M on the loop's thread, then `run()` until the last timer to fire stops it.
/// SwiftNIO: `scheduleTask(in:)` ×1M from inside its loop, the last to fire stops the clock.
enum TimersScheduleAndFire {
    static let nioPeer = "NIO scheduleTask(in:)"

    static func run(_ options: Options, nio: MultiThreadedEventLoopGroup) throws -> [Row] {
        let n = options.count(1_000_000, quick: 100_000)

        let loop = try LoopKit.EventLoop()
        var comparison = Comparison(options)
        var schedulingShare: [Double] = []
        comparison.loopKit("LoopKit", operations: n) {
            let (elapsed, scheduling) = try loopKitTimers(loop, n)
            schedulingShare.append(Double(scheduling) / Double(elapsed))
            return elapsed
        }

        let eventLoop = nio.next()
        comparison.peer(nioPeer, operations: n) { try nioTimers(eventLoop, n) }

        let figures = try comparison.run()
        loop.shutdown()
        let loopKit = figures["LoopKit"]
        let share = median(schedulingShare)
        return [
            Row(scenario: "1M timers, schedule + fire", unit: .nanoseconds, loopKit: loopKit,
                peers: figures.peers(nioPeer), goal: .atMostNanoseconds(500),
                note: "Delays i % 1000 ns, scheduled on the loop thread; timed from the first schedule until the "
                    + "last timer fired. Each LoopKit timer allocates its ScheduledTimer handle; the bodies "
                    + "capture nothing. LoopKit's time splits into scheduling "
                    + "\(format(loopKit.median * share, unit: .nanoseconds)) ns and firing "
                    + "\(format(loopKit.median * (1 - share), unit: .nanoseconds)) ns per timer."),
        ]
    }
}

extension TimersScheduleAndFire {
    /// LoopKit: `n` timers scheduled on the loop's thread (this one), then `run()` until the last fired;
    /// returns the elapsed nanoseconds and the part spent scheduling.
    static func loopKitTimers(_ loop: LoopKit.EventLoop, _ n: Int) throws -> (elapsed: UInt64, scheduling: UInt64) {
        timerLoop = loop
        timerTarget = n
        defer { timerLoop = nil }
        benchCounter = 0
        let start = monotonicNanoseconds()
        for i in 0..<n { try loop.schedule(after: .nanoseconds(i % 1000), loopKitTimerFired) }
        let scheduled = monotonicNanoseconds()
        try loop.run()
        let elapsed = monotonicNanoseconds() - start
        check(benchCounter == n, "LoopKit fired \(benchCounter) of \(n) timers")
        return (elapsed, scheduled - start)
    }

    /// SwiftNIO: `n` `scheduleTask(in:)` on its loop's thread, timed until the last fired.
    static func nioTimers(_ eventLoop: any NIOCore.EventLoop, _ n: Int) throws -> UInt64 {
        let finish = Finish()
        timerFinish = finish
        timerTarget = n
        defer { timerFinish = nil }
        let start = try eventLoop.submit { () -> UInt64 in
            benchCounter = 0
            let start = monotonicNanoseconds()
            for i in 0..<n { eventLoop.scheduleTask(in: .nanoseconds(Int64(i % 1000)), nioTimerFired) }
            return start
        }.wait()
        let end = finish.wait()
        try eventLoop.submit { check(benchCounter == n, "NIO fired \(benchCounter) of \(n) timers") }.wait()
        return end - start
    }
}

nonisolated(unsafe) private var timerLoop: LoopKit.EventLoop?
nonisolated(unsafe) private var timerTarget = 0
nonisolated(unsafe) private var timerFinish: Finish?

@Sendable private func loopKitTimerFired() {
    benchCounter &+= 1
    if benchCounter == timerTarget { timerLoop!.stop() }
}

@Sendable private func nioTimerFired() {
    benchCounter &+= 1
    if benchCounter == timerTarget { timerFinish!.signal() }
}
