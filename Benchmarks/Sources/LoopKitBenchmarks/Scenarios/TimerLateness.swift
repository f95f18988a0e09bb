import Synchronization
import LoopKit
import NIOCore
import NIOPosix

/// Timer lateness on an idle loop: how long after its deadline a timer's body runs.
///
/// A chain of one-shot timers, each scheduled from the previous one's body with a 1 ms delay, on a loop
/// that has nothing else to do (blocked in its poll until the timer is due). Each body records
/// `now - deadline`. LoopKit: `schedule(after:)` on a `LoopGroup` loop. SwiftNIO: `scheduleTask(in:)` on
/// its loop. The p50 and p99 of each run are kept; the rows show the median over runs.
///
/// A second measurement checks a repeating timer's rate: a 1 ms repeating timer, counted over 100 ms.
enum TimerLateness {
    static let nioPeer = "NIO scheduleTask(in: 1 ms)"
    static let delay: UInt64 = 1_000_000

    static func run(_ options: Options, nio: MultiThreadedEventLoopGroup) throws -> [Row] {
        let samples = options.count(1_000, quick: 200)
        let group = try LoopGroup(threads: 1, name: "bench-lateness")
        let loop = group.next()
        let eventLoop = nio.next()

        var loopKit: (p50: [Double], p99: [Double]) = ([], [])
        var peer: (p50: [Double], p99: [Double]) = ([], [])
        var ticks: [Double] = []
        for round in 0...options.runs {  // round 0 is the warm-up
            let mine = try loopKitLateness(loop, samples: samples)
            let theirs = options.peers ? try nioLateness(eventLoop, samples: samples) : []
            let rate = try repeatingTicks(loop)
            guard round > 0 else { continue }
            loopKit.p50.append(percentile(mine, 0.50))
            loopKit.p99.append(percentile(mine, 0.99))
            if !theirs.isEmpty {
                peer.p50.append(percentile(theirs, 0.50))
                peer.p99.append(percentile(theirs, 0.99))
            }
            ticks.append(Double(rate))
        }
        group.shutdown()

        func figure(_ values: [Double]) -> Figure { Figure(median: median(values), samples: values) }
        func peers(_ values: [Double]) -> [(name: String, figure: Figure)] {
            values.isEmpty ? [] : [(name: nioPeer, figure: figure(values))]
        }
        return [
            Row(scenario: "timer lateness p50, idle loop, 1 ms", unit: .microseconds, loopKit: figure(loopKit.p50),
                peers: peers(peer.p50), goal: .none, note: nil),
            Row(scenario: "timer lateness p99, idle loop, 1 ms", unit: .microseconds, loopKit: figure(loopKit.p99),
                peers: peers(peer.p99), goal: .noSlowerThan(peer: nioPeer),
                note: "\(samples) one-shot 1 ms timers per run, each scheduled from the previous one's body on a loop "
                    + "with nothing else to do; lateness = when the body ran - the deadline. A 1 ms repeating "
                    + "LoopKit timer fired \(format(median(ticks), unit: .nanoseconds)) times in 100 ms (median over runs; "
                    + "100 expected)."),
        ]
    }

    /// A chain of `samples` 1 ms timers on `loop`; returns each one's lateness in nanoseconds.
    private static func loopKitLateness(_ loop: LoopKit.EventLoop, samples: Int) throws -> [Double] {
        let box = LatenessBox(capacity: samples)
        let finish = Finish()
        @Sendable func next() {
            let deadline = monotonicNanoseconds() + delay
            try! loop.schedule(after: .nanoseconds(Int64(delay))) {
                if box.record(monotonicNanoseconds() - deadline) { finish.signal() } else { next() }
            }
        }
        try loop.enqueue { next() }
        _ = finish.wait()
        return box.values
    }

    /// The same chain on a NIO loop.
    private static func nioLateness(_ eventLoop: any NIOCore.EventLoop, samples: Int) throws -> [Double] {
        let box = LatenessBox(capacity: samples)
        let finish = Finish()
        @Sendable func next() {
            let deadline = monotonicNanoseconds() + delay
            eventLoop.scheduleTask(in: .nanoseconds(Int64(delay))) {
                if box.record(monotonicNanoseconds() - deadline) { finish.signal() } else { next() }
            }
        }
        eventLoop.execute { next() }
        _ = finish.wait()
        return box.values
    }

    /// How many times a 1 ms repeating timer fires in 100 ms of real time.
    private static func repeatingTicks(_ loop: LoopKit.EventLoop) throws -> Int {
        let count = Atomic<Int>(0)
        let finish = Finish()
        try loop.enqueue {
            let timer = try! loop.schedule(after: .milliseconds(1), repeating: .milliseconds(1)) {
                count.add(1, ordering: .relaxed)
            }
            try! loop.schedule(after: .microseconds(100_500)) {
                timer.cancel()
                finish.signal()
            }
        }
        _ = finish.wait()
        return count.load(ordering: .relaxed)
    }
}

/// The `p`-quantile of `values` (nearest rank).
func percentile(_ values: [Double], _ p: Double) -> Double {
    precondition(!values.isEmpty)
    let sorted = values.sorted()
    let rank = min(sorted.count - 1, max(0, Int((p * Double(sorted.count)).rounded(.up)) - 1))
    return sorted[rank]
}

/// Lateness samples, written by one loop thread at a time and read after the chain's ``Finish``.
private final class LatenessBox: Sendable {
    private let storage: Mutex<[Double]>
    private let capacity: Int

    init(capacity: Int) {
        self.capacity = capacity
        storage = Mutex([])
        storage.withLock { $0.reserveCapacity(capacity) }
    }

    /// Records one sample; returns true when the box is full.
    func record(_ nanoseconds: UInt64) -> Bool {
        storage.withLock { values in
            values.append(Double(nanoseconds))
            return values.count >= capacity
        }
    }

    var values: [Double] { storage.withLock { $0 } }
}
