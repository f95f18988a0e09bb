// `Task.sleep` lateness, the second figure of `make bench-main`: how long after its deadline a task that
// sleeps 1 ms goes on, on a LoopKit loop and on Swift's default executor, in one process.
//
//   TaskSleepLateness [--sleeps 2000] [--block 100] [--warmup 100] [--spin-us 200]
//
// A loop task is `Task.detached(executorPreference: loop)` on the one loop of a `LoopGroup(threads: 1)`: a
// loop is a SchedulingExecutor, so its `Task.sleep(for:)` ends with one of the loop's timers. A default task
// is `Task.detached` with no preference (Swift's cooperative pool; its sleeps end with Dispatch's timers).
// Each task sleeps `Task.sleep(for: .milliseconds(1))` BLOCK times in a row (nothing else runs in the
// process) and records, for each sleep, when it went on minus its deadline (`ContinuousClock`: the instant
// before the call + 1 ms). The two sides take turns, block by block (loop, default, loop, default, …), after
// a warm-up block each, until each has slept SLEEPS times.
//
// For reference, a third side in the same turns takes no task at all: a chain of one-shot loop timers
// (`loop.schedule(after: .milliseconds(1))`, each scheduled from the previous one's body), timed the same way:
// the loop's own timer lateness on this machine at this moment, what a loop task's sleep adds to it. A fourth
// side is a loop task on a second one-loop group whose loop has `timerSpin` set to SPIN-US: it wakes that
// long before each timer and spins to the deadline, trading CPU for lateness; the loop thread's CPU time per
// sleep is printed for both loop sides.
//
// Output:
//   check where loop_task_on_loop 1|0 default_task_off_loops 1|0
//   sleep executor loopkit|default|loop-timer|loopkit-spin sleeps N p50_us X p90_us X p99_us X max_us X
//     loop_iterations_per_sleep I loop_cpu_us_per_sleep C
// (I: how many iterations the loop ran per sleep on that side; 0 for the default executor's, which the loop
// does not run)
import Foundation
import LoopKit

let arguments = Array(CommandLine.arguments.dropFirst())
func option(_ name: String) -> String? {
    arguments.firstIndex(of: name).flatMap { $0 + 1 < arguments.count ? arguments[$0 + 1] : nil }
}

/// `count` sleeps of 1 ms in a row in the calling task; returns each one's lateness in nanoseconds, and
/// whether the task went on on `loop` after its first sleep.
nonisolated func sleeps(_ count: Int, loop: EventLoop) async -> (lateness: [Int64], onLoop: Bool) {
    let clock = ContinuousClock()
    var lateness: [Int64] = []
    lateness.reserveCapacity(count)
    var onLoop = false
    for index in 0..<count {
        let deadline = clock.now.advanced(by: .milliseconds(1))
        try? await Task.sleep(for: .milliseconds(1))
        let late = clock.now - deadline
        lateness.append(late.components.seconds * 1_000_000_000 + late.components.attoseconds / 1_000_000_000)
        if index == 0 { onLoop = loop.isCurrent }
    }
    return (lateness, onLoop)
}

/// A chain of one-shot 1 ms loop timers, each scheduled from the previous one's body. Touched on the loop
/// only, after its start.
final class TimerChain: @unchecked Sendable {
    private let clock = ContinuousClock()
    private let count: Int
    private let continuation: CheckedContinuation<[Int64], Never>
    private var lateness: [Int64] = []

    init(count: Int, continuation: CheckedContinuation<[Int64], Never>) {
        self.count = count
        self.continuation = continuation
        lateness.reserveCapacity(count)
    }

    /// `count` timers on `loop`; returns each one's lateness in nanoseconds.
    static func run(_ count: Int, on loop: EventLoop) async -> [Int64] {
        await withCheckedContinuation { continuation in
            let chain = TimerChain(count: count, continuation: continuation)
            try! loop.enqueue { chain.next(on: loop) }
        }
    }

    private func next(on loop: EventLoop) {
        let deadline = clock.now.advanced(by: .milliseconds(1))
        _ = try! loop.schedule(after: .milliseconds(1)) { [self] in
            let late = clock.now - deadline
            lateness.append(late.components.seconds * 1_000_000_000 + late.components.attoseconds / 1_000_000_000)
            if lateness.count == count { continuation.resume(returning: lateness) } else { next(on: loop) }
        }
    }
}

/// The `fraction` percentile of `values` (nearest rank), in microseconds.
func percentile(_ values: [Int64], _ fraction: Double) -> Double {
    let sorted = values.sorted()
    let rank = min(sorted.count - 1, max(0, Int((fraction * Double(sorted.count)).rounded(.up)) - 1))
    return Double(sorted[rank]) / 1_000
}

@main
struct TaskSleepLateness {
    static func main() async throws {
        let total = option("--sleeps").flatMap { Int($0) } ?? 2_000
        let block = option("--block").flatMap { Int($0) } ?? 100
        let warmup = option("--warmup").flatMap { Int($0) } ?? 100
        let group = try LoopGroup(threads: 1, name: "sleep")
        let loop = group.loops[0]
        // The same on a loop with a timer spin (EventLoop.timerSpin): it wakes that long before each timer.
        let spinMicroseconds = option("--spin-us").flatMap { Int($0) } ?? 200
        let spinGroup = try LoopGroup(threads: 1, name: "sleep-spin")
        let spinLoop = spinGroup.loops[0]
        spinLoop.timerSpin = .microseconds(spinMicroseconds)
        /// CPU time of `loop`'s thread so far, in nanoseconds.
        func loopCPU(_ loop: EventLoop) async -> UInt64 {
            (try? await loop.perform { () -> UInt64 in
                var spec = timespec()
                clock_gettime(CLOCK_THREAD_CPUTIME_ID, &spec)
                return UInt64(spec.tv_sec) * 1_000_000_000 + UInt64(spec.tv_nsec)
            }) ?? 0
        }
        var cpu: [String: UInt64] = [:]

        func onLoop(_ count: Int) async -> (lateness: [Int64], onLoop: Bool) {
            await Task.detached(executorPreference: loop) { await sleeps(count, loop: loop) }.value
        }
        func onDefault(_ count: Int) async -> (lateness: [Int64], onLoop: Bool) {
            await Task.detached { await sleeps(count, loop: loop) }.value
        }

        func onSpinLoop(_ count: Int) async -> (lateness: [Int64], onLoop: Bool) {
            await Task.detached(executorPreference: spinLoop) { await sleeps(count, loop: spinLoop) }.value
        }
        _ = await onSpinLoop(warmup)
        let loopWarmup = await onLoop(warmup)
        let defaultWarmup = await onDefault(warmup)
        _ = await TimerChain.run(warmup, on: loop)
        print("check where loop_task_on_loop \(loopWarmup.onLoop ? 1 : 0) default_task_off_loops \(defaultWarmup.onLoop ? 0 : 1)")
        var loopKit: [Int64] = [], platform: [Int64] = [], timers: [Int64] = [], spinning: [Int64] = []
        var iterations: [String: UInt64] = ["loopkit": 0, "default": 0, "loop-timer": 0, "loopkit-spin": 0]
        while loopKit.count < total {
            let count = min(block, total - loopKit.count)
            var before = loop.iteration
            var cpuBefore = await loopCPU(loop)
            loopKit += await onLoop(count).lateness
            cpu["loopkit", default: 0] += await loopCPU(loop) - cpuBefore
            iterations["loopkit", default: 0] += loop.iteration - before
            before = spinLoop.iteration
            cpuBefore = await loopCPU(spinLoop)
            spinning += await onSpinLoop(count).lateness
            cpu["loopkit-spin", default: 0] += await loopCPU(spinLoop) - cpuBefore
            iterations["loopkit-spin", default: 0] += spinLoop.iteration - before
            platform += await onDefault(count).lateness
            before = loop.iteration
            timers += await TimerChain.run(count, on: loop)
            iterations["loop-timer", default: 0] += loop.iteration - before
        }
        for (name, values) in [("loopkit", loopKit), ("default", platform), ("loop-timer", timers), ("loopkit-spin", spinning)] {
            let figures = [0.50, 0.90, 0.99].map { String(format: "%.1f", percentile(values, $0)) }
            print("sleep executor \(name) sleeps \(values.count) p50_us \(figures[0]) p90_us \(figures[1]) p99_us \(figures[2]) "
                + "max_us \(String(format: "%.1f", Double(values.max() ?? 0) / 1_000)) "
                + "loop_iterations_per_sleep \(String(format: "%.2f", Double(iterations[name] ?? 0) / Double(values.count))) "
                + "loop_cpu_us_per_sleep \(String(format: "%.1f", Double(cpu[name] ?? 0) / 1_000 / Double(values.count)))")
        }
        group.shutdown()
        spinGroup.shutdown()
    }
}
