import Foundation
import LoopKit

/// The memory row: resident set growth over 10M iterations, each `runOnce(blocking: false)` with one job
/// enqueued before it. The design asks for no growth: no allocation per enqueue beyond the closure itself.
enum MemoryIterations {
    static func run(_ options: Options) throws -> [Row] {
        let n = options.count(10_000_000, quick: 1_000_000)
        let loop = try LoopKit.EventLoop()
        benchCounter = 0
        // Settle the allocator and the loop's buffers before the first reading.
        for _ in 0..<100_000 {
            try loop.enqueue { benchCounter &+= 1 }
            try loop.runOnce(blocking: false)
        }
        let before = residentKiB()
        let start = monotonicNanoseconds()
        for _ in 0..<n {
            try loop.enqueue { benchCounter &+= 1 }
            try loop.runOnce(blocking: false)
        }
        let elapsed = monotonicNanoseconds() - start
        let after = residentKiB()
        check(benchCounter == n + 100_000, "LoopKit ran \(benchCounter) of \(n + 100_000) jobs")
        loop.shutdown()
        let growth = Double(after - before)
        return [
            Row(scenario: "memory: \(n / 1_000_000)M iterations", unit: .kibibytes,
                loopKit: Figure(median: growth, samples: [growth]), peers: [], goal: .growthAtMostKiB(256),
                note: "RSS \(before) KiB before, \(after) KiB after (/proc/self/statm); one enqueue + "
                    + "runOnce(blocking: false) per iteration, \(format(Double(elapsed) / Double(n), unit: .nanoseconds)) ns each."),
        ]
    }

    /// The resident set size in KiB, from `/proc/self/statm` (its second field, in pages).
    static func residentKiB() -> Int {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
        let fields = text.split(separator: " ")
        guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE))) / 1024
    }
}
