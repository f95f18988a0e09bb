// The main thread's runtime, the first figure of `make bench-main`: how long a hop to the main thread and
// back takes when the main thread runs LoopKit's main loop, Foundation's RunLoop or Dispatch's own main.
//
//   MainThreadHop --runtime loopkit|loopkit-executor|runloop|dispatchmain [--round-trips 20000] [--warmup 2000]
//
// The main thread runs the runtime named, from this synchronous main (the main thread and `dispatchMain()`
// belong to the whole process, so each runtime is a process of its own; Benchmarks/main-bench.sh alternates
// them):
//   loopkit       `try EventLoop.main.run()`: the main loop drains Dispatch's main queue (rule R12)
//   loopkit-executor  `LoopKitExecutors.install()`, then `try EventLoop.main.run()`: the main actor's jobs are the
//                 main loop's own queued work (Swift's main executor is the loop); `DispatchQueue.main` as above
//   runloop       `RunLoop.main.run()`: CoreFoundation's run loop drains it
//   dispatchmain  `dispatchMain()`: Dispatch runs its main queue itself
//
// Another thread then makes two kinds of round trip, each a ping-pong (one answer awaited before the next
// question), warm-up first, and prints one line per kind:
//   mainactor  a detached task awaits `MainActor.run { counter += 1 }` ROUND_TRIPS times (the task is on Swift's
//              cooperative pool; on Linux the main actor is Dispatch's main queue)
//   mainqueue  a background thread posts `DispatchQueue.main.async { counter += 1; answered.signal() }` and
//              waits on the semaphore, ROUND_TRIPS times
//
// Output, one line each (then the process exits):
//   mainhop runtime R hop mainactor round_trips N ns_per_round_trip X
//   mainhop runtime R hop mainqueue round_trips N ns_per_round_trip X
//   check runtime R main_queue_on_main_loop 1|0 executors_installed 1|0
//        (loopkit and loopkit-executor only: the main queue ran inside EventLoop.main; LoopKitExecutors installed)
import Dispatch
import Foundation
import LoopKit
import LoopKitExecutors
import Synchronization

let arguments = Array(CommandLine.arguments.dropFirst())
func option(_ name: String) -> String? {
    arguments.firstIndex(of: name).flatMap { $0 + 1 < arguments.count ? arguments[$0 + 1] : nil }
}
let runtime = option("--runtime") ?? "loopkit"
let roundTrips = option("--round-trips").flatMap { Int($0) } ?? 20_000
let warmup = option("--warmup").flatMap { Int($0) } ?? 2_000
guard ["loopkit", "loopkit-executor", "runloop", "dispatchmain"].contains(runtime) else {
    FileHandle.standardError.write(Data("MainThreadHop: --runtime loopkit|loopkit-executor|runloop|dispatchmain\n".utf8))
    exit(2)
}

/// Nanoseconds on the monotonic clock.
func monotonicNanoseconds() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
}

/// The round trips, run on the other thread.
enum Hops {
    /// What the main side increments: touched on the main actor (the main queue) only.
    @MainActor static var mainCounter = 0
    /// `count` awaited `MainActor.run` round trips from the calling task; returns the elapsed nanoseconds.
    nonisolated static func mainActorRoundTrips(_ count: Int) async -> UInt64 {
        let start = monotonicNanoseconds()
        for _ in 0..<count {
            await MainActor.run { mainCounter &+= 1 }
        }
        return monotonicNanoseconds() - start
    }

    /// `count` main-queue round trips from the calling (non-main) thread; returns the elapsed nanoseconds.
    static func mainQueueRoundTrips(_ count: Int) -> UInt64 {
        let answered = DispatchSemaphore(value: 0)
        let start = monotonicNanoseconds()
        for _ in 0..<count {
            DispatchQueue.main.async {
                MainActor.assumeIsolated { mainCounter &+= 1 }
                answered.signal()
            }
            answered.wait()
        }
        return monotonicNanoseconds() - start
    }

    /// Runs `body` in a detached task (Swift's cooperative pool) and blocks this thread for its result.
    static func inDetachedTask(_ body: @escaping @Sendable () async -> UInt64) -> UInt64 {
        let done = DispatchSemaphore(value: 0)
        let result = Mutex<UInt64>(0)
        Task.detached {
            let value = await body()
            result.withLock { $0 = value }
            done.signal()
        }
        done.wait()
        return result.withLock { $0 }
    }

    /// The other thread: warm-up, one timed run of each kind, the lines, exit.
    static func measure(runtime: String, roundTrips: Int, warmup: Int) {
        if runtime.hasPrefix("loopkit") {
            let done = DispatchSemaphore(value: 0)
            let onMainLoop = Mutex(false)
            DispatchQueue.main.async {
                onMainLoop.withLock { $0 = EventLoop.current === EventLoop.main && EventLoop.main.isRunning }
                done.signal()
            }
            done.wait()
            print("check runtime \(runtime) main_queue_on_main_loop \(onMainLoop.withLock { $0 } ? 1 : 0) executors_installed \(LoopKitExecutors.isInstalled ? 1 : 0)")
        }
        _ = inDetachedTask { await mainActorRoundTrips(warmup) }
        _ = mainQueueRoundTrips(warmup)
        let mainActor = inDetachedTask { await mainActorRoundTrips(roundTrips) }
        let mainQueue = mainQueueRoundTrips(roundTrips)
        for (hop, nanoseconds) in [("mainactor", mainActor), ("mainqueue", mainQueue)] {
            let perRoundTrip = Double(nanoseconds) / Double(roundTrips)
            print("mainhop runtime \(runtime) hop \(hop) round_trips \(roundTrips) ns_per_round_trip \(String(format: "%.1f", perRoundTrip))")
        }
        fflush(nil)
        exit(0)
    }
}

// The main executor's install comes first, before any task starts (LoopKitExecutors' rule).
if runtime == "loopkit-executor" { LoopKitExecutors.install() }

let worker = Thread { [runtime, roundTrips, warmup] in
    Hops.measure(runtime: runtime, roundTrips: roundTrips, warmup: warmup)
}
worker.start()

switch runtime {
case "loopkit", "loopkit-executor":
    try EventLoop.main.run()
case "runloop":
    RunLoop.main.run()
default:
    dispatchMain()
}
// RunLoop.main.run() returns only when the run loop has no input sources left; the main queue keeps it.
FileHandle.standardError.write(Data("MainThreadHop: the \(runtime) runtime returned before the measurement ended\n".utf8))
exit(1)
