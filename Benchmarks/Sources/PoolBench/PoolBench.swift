// The work pool and files (`make bench-pool`), LoopKit and its SwiftNIO peer measured in the same process,
// alternated round by round (the order swapped every round), after a warm-up of each:
//   1. offload round trip: a loop hands an empty closure to a 2-thread pool and gets the result back on the
//      loop, one at a time (loop -> pool -> loop): LoopKit's loop.offload(to:_:completion:) on a WorkPool
//      against NIO's NIOThreadPool.runIfActive(eventLoop:_:) with the future's callback on its event loop.
//   2. a 1 GiB file read through the pool (page cache warm): LoopKit's FileSystem.chunks(of:) consumed by a
//      task on the loop, against NIOFileSystem's readChunks(), each with its default chunk size and again
//      with 1 MiB chunks.
//   3. a 1M-item offload burst (LoopKit only: NIO's loop has no iteration report): a loop hands 1,000,000 empty
//      closures to the shared pool from loop.process (a 4 ms budget per iteration), each completion counted
//      on the loop; the loop's busy time per iteration (its report's total less its poll wait), p50/p99/max,
//      against the 4 ms budget, and the items per second; with the share of CPU time the hypervisor stole
//      during each burst (/proc/stat), and the goal again over the bursts that lost under 1 % to it.
// Output: one "pool ..." line per round and figure, then a summary: medians [min-max], ratios per round.
//   --rounds N (9)  --round-trips N (20000)  --file PATH (/tmp/loopkit-pool-bench-1GiB)  --skip-file
//   --burst N (1000000)  --bursts N (3; 0 skips it)  --only loopkit|nio (the round trips of one side alone, for
//   callgrind: Benchmarks/callgrind.sh counts instructions per round trip with it)
import Dispatch
import Foundation
import LoopKit
import LoopKitNet
import NIOCore
import NIOFileSystem
import NIOPosix
import Synchronization

let arguments = CommandLine.arguments
func option(_ name: String, _ fallback: Int) -> Int {
    arguments.firstIndex(of: name).flatMap { Int(arguments[$0 + 1]) } ?? fallback
}
let rounds = option("--rounds", 9)
let roundTrips = option("--round-trips", 20_000)
let filePath = arguments.firstIndex(of: "--file").map { arguments[$0 + 1] } ?? "/tmp/loopkit-pool-bench-1GiB"
let skipFile = arguments.contains("--skip-file")
let fileSize = 1 << 30

func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
}

func summary(_ values: [Double], _ format: String) -> String {
    "\(String(format: format, median(values))) [\(String(format: format, values.min()!))-\(String(format: format, values.max()!))]"
}

/// "M.MMx (min-max)" of the per-round ratios.
func ratio(_ ratios: [Double]) -> String {
    String(format: "%.2fx (%.2f-%.2f)", median(ratios), ratios.min()!, ratios.max()!)
}

// MARK: 1. Offload round trip

/// A loop running on a thread of its own.
let group = try LoopGroup(threads: 1)
let loop = group.next()
let workPool = try WorkPool(threads: 2, name: "bench pool")

/// Hands `count` empty closures to the pool one after the other, each completion offloading the next.
func loopKitRoundTrips(_ count: Int) -> Double {
    let done = DispatchSemaphore(value: 0)
    let start = now()
    try! loop.invokeAndWait {
        final class Chain: Sendable {
            let remaining = Mutex(0)
            let done: DispatchSemaphore
            init(_ count: Int, _ done: DispatchSemaphore) {
                remaining.withLock { $0 = count }
                self.done = done
            }
            func next() {
                let left = remaining.withLock { value -> Int in value -= 1; return value }
                guard left >= 0 else { done.signal(); return }
                try! loop.offload(to: workPool, { () }) { _ in self.next() }
            }
        }
        Chain(count, done).next()
    }
    done.wait()
    return Double(now() - start) / Double(count)
}

let nioGroup = MultiThreadedEventLoopGroup(numberOfThreads: 1)
let nioLoop = nioGroup.next()
let nioPool = NIOThreadPool(numberOfThreads: 2)
nioPool.start()

func nioRoundTrips(_ count: Int) -> Double {
    let done = DispatchSemaphore(value: 0)
    let start = now()
    nioLoop.execute {
        final class Chain: Sendable {
            let remaining = Mutex(0)
            let done: DispatchSemaphore
            init(_ count: Int, _ done: DispatchSemaphore) {
                remaining.withLock { $0 = count }
                self.done = done
            }
            func next() {
                let left = remaining.withLock { value -> Int in value -= 1; return value }
                guard left >= 0 else { done.signal(); return }
                nioPool.runIfActive(eventLoop: nioLoop) { () }.whenComplete { _ in self.next() }
            }
        }
        Chain(count, done).next()
    }
    done.wait()
    return Double(now() - start) / Double(count)
}

print("== The work pool and files: \(rounds) rounds, LoopKit and NIO alternated (order swapped every round), after a warm-up")
print("   (\(ProcessInfo.processInfo.activeProcessorCount) cores, load average at the start: \(loadAverage()))")
print()
print("1. Offload round trip: an empty closure, loop -> 2-thread pool -> loop, one at a time, \(roundTrips) per round; ns per round trip")
let only = arguments.firstIndex(of: "--only").map { arguments[$0 + 1] }
if let only {
    // One side alone, no warm-up: what callgrind counts is every instruction of `roundTrips` round trips.
    print("pool only \(only) ns \(only == "nio" ? nioRoundTrips(roundTrips) : loopKitRoundTrips(roundTrips))")
    exit(0)
}
_ = loopKitRoundTrips(roundTrips / 10)
_ = nioRoundTrips(roundTrips / 10)
var lkTrips: [Double] = [], nioTrips: [Double] = []
for round in 0..<rounds {
    if round % 2 == 0 {
        lkTrips.append(loopKitRoundTrips(roundTrips)); nioTrips.append(nioRoundTrips(roundTrips))
    } else {
        nioTrips.append(nioRoundTrips(roundTrips)); lkTrips.append(loopKitRoundTrips(roundTrips))
    }
    print("pool round \(round + 1) figure offload loopkit_ns \(Int(lkTrips.last!)) nio_ns \(Int(nioTrips.last!))")
}
let tripRatios = zip(nioTrips, lkTrips).map { $0 / $1 }
print("   LoopKit loop.offload(to:_:completion:)       \(summary(lkTrips, "%.0f")) ns")
print("   NIO NIOThreadPool.runIfActive(eventLoop:)    \(summary(nioTrips, "%.0f")) ns")
print("   NIO / LoopKit per round (above 1: LoopKit faster): \(ratio(tripRatios))")
print("   goal: >= NIOThreadPool: \(median(tripRatios) >= 1 ? "met" : "MISSED")")

// MARK: 2. 1 GiB read

func loadAverage() -> String {
    ((try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8)) ?? "?").split(separator: " ").prefix(3).joined(separator: " ")
}

func makeFileIfNeeded() throws {
    if let size = try? FileManager.default.attributesOfItem(atPath: filePath)[.size] as? Int, size == fileSize { return }
    let fd = open(filePath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    precondition(fd >= 0, "cannot create \(filePath)")
    var block = [UInt8](repeating: 0, count: 1 << 20)
    for i in block.indices { block[i] = UInt8(truncatingIfNeeded: i &* 31) }
    for _ in 0..<(fileSize >> 20) { precondition(write(fd, block, block.count) == block.count) }
    close(fd)
}

/// MB/s (10^6 bytes per second) reading the whole file with LoopKit's chunks, consumed by a task on the loop.
func loopKitRead(chunkSize: Int) async throws -> Double {
    let files = LoopKitNet.FileSystem(loop: loop)
    let start = now()
    let total = try await Task(executorPreference: loop) {
        var total = 0
        for try await chunk in files.chunks(of: filePath, chunkSize: chunkSize) { total += chunk.count }
        return total
    }.value
    precondition(total == fileSize, "LoopKit read \(total) bytes")
    return Double(fileSize) / (Double(now() - start) / 1e9) / 1e6
}

/// MB/s reading the whole file with NIOFileSystem's readChunks.
func nioRead(chunkSize: Int?) async throws -> Double {
    let start = now()
    let total = try await NIOFileSystem.FileSystem.shared.withFileHandle(forReadingAt: FilePath(filePath)) { handle in
        var total = 0
        if let chunkSize {
            for try await chunk in handle.readChunks(chunkLength: .bytes(Int64(chunkSize))) { total += chunk.readableBytes }
        } else {
            for try await chunk in handle.readChunks() { total += chunk.readableBytes }
        }
        return total
    }
    precondition(total == fileSize, "NIO read \(total) bytes")
    return Double(fileSize) / (Double(now() - start) / 1e9) / 1e6
}

if !skipFile {
    try makeFileIfNeeded()
    print()
    print("2. Read a 1 GiB file through the pool (page cache warm), MB/s (10^6 bytes/s); LoopKit's consumer is a task on the loop")
    for (label, lkChunk, nioChunk) in [("default chunks (LoopKit 256 KiB x 4 ahead, NIO 128 KiB)", FileChunks.defaultChunkSize, nil as Int?),
                                      ("1 MiB chunks (LoopKit 4 ahead)", 1 << 20, 1 << 20)] {
        _ = try await loopKitRead(chunkSize: lkChunk)
        _ = try await nioRead(chunkSize: nioChunk)
        var lk: [Double] = [], nio: [Double] = []
        let fileRounds = max(3, rounds / 2)
        for round in 0..<fileRounds {
            if round % 2 == 0 {
                lk.append(try await loopKitRead(chunkSize: lkChunk)); nio.append(try await nioRead(chunkSize: nioChunk))
            } else {
                nio.append(try await nioRead(chunkSize: nioChunk)); lk.append(try await loopKitRead(chunkSize: lkChunk))
            }
            print("pool round \(round + 1) figure read chunks \(lkChunk) loopkit_mbps \(Int(lk.last!)) nio_mbps \(Int(nio.last!))")
        }
        let ratios = zip(lk, nio).map { $0 / $1 }
        print("   \(label)")
        print("     LoopKit FileSystem.chunks(of:)          \(summary(lk, "%.0f")) MB/s")
        print("     NIOFileSystem readChunks()              \(summary(nio, "%.0f")) MB/s")
        print("     LoopKit / NIO per round (above 1: LoopKit faster): \(ratio(ratios))")
        print("     goal: >= NIOFileSystem: \(median(ratios) >= 1 ? "met" : "MISSED")")
    }
}
// MARK: 3. A 1M-item offload burst

let burstItems = option("--burst", 1_000_000)
let bursts = option("--bursts", 3)

/// The loop's busy time per iteration (ms) while it hands `count` closures to the shared pool from a budgeted
/// job and counts their completions, and the items per second.
func offloadBurst(_ count: Int) throws -> (busy: [Double], itemsPerSecond: Double) {
    let busy = Mutex<[Double]>([])
    let finished = DispatchSemaphore(value: 0)
    let start = now()
    try loop.invokeAndWait {
        final class Counter: Sendable {
            let completed = Mutex(0)
        }
        let counter = Counter()
        try loop.setIterationObserver { report in
            let total = report.total - report.pollWait
            let ms = Double(total.components.seconds) * 1e3 + Double(total.components.attoseconds) / 1e15
            busy.withLock { $0.append(ms) }
        }
        _ = try loop.process(0..<count, each: { _ in
            try loop.offload({ () }) { _ in
                let done = counter.completed.withLock { value -> Int in value += 1; return value }
                if done == count { finished.signal() }
            }
        }, completion: { outcome in
            if case .succeeded = outcome {} else { print("burst job ended: \(outcome)"); finished.signal() }
        })
    }
    finished.wait()
    let seconds = Double(now() - start) / 1e9
    try loop.invokeAndWait { try loop.setIterationObserver(nil) }
    return (busy.withLock { $0 }, Double(count) / seconds)
}

func percentile(_ values: [Double], _ p: Double) -> Double {
    let sorted = values.sorted()
    return sorted[min(sorted.count - 1, Int((Double(sorted.count) * p).rounded(.up)) - 1)]
}

print()
print("3. A \(burstItems)-item offload burst from loop.process (4 ms budget) to WorkPool.shared (\(WorkPool.shared.threadCount) threads), \(bursts) bursts;")
print("   the loop's busy time per iteration (report total less poll wait), ms; LoopKit only")
var p99s: [Double] = []
/// The p99s of bursts during which the hypervisor stole under 1 % of the CPU: what the loop itself keeps to.
var quietP99s: [Double] = []
/// The machine's CPU ticks so far: (steal, all), from /proc/stat's first line. Steal is time the
/// hypervisor ran something else while a vCPU had work: a loop loses its core then and no code prevents it.
func cpuTicks() -> (steal: Int, all: Int) {
    guard let stat = try? String(contentsOfFile: "/proc/stat", encoding: .utf8),
          let line = stat.split(separator: "\n").first else { return (0, 0) }
    let fields = line.split(separator: " ").dropFirst().compactMap { Int($0) }
    return (fields.count > 7 ? fields[7] : 0, fields.reduce(0, +))
}
for burst in 0..<bursts where bursts > 0 {
    let before = cpuTicks()
    let (busy, rate) = try offloadBurst(burstItems)
    let after = cpuTicks()
    let p99 = percentile(busy, 0.99)
    p99s.append(p99)
    let steal = after.all > before.all ? 100 * Double(after.steal - before.steal) / Double(after.all - before.all) : 0
    if steal < 1 { quietP99s.append(p99) }
    print(String(format: "   burst %d: %d iterations, busy p50 %.3f  p99 %.3f  max %.3f ms; %.0f items/s; CPU stolen by the hypervisor %.1f %%",
                 burst + 1, busy.count, percentile(busy, 0.5), p99, busy.max()!, rate, steal))
}
if !p99s.isEmpty { print(String(format: "   goal: iteration p99 under the 4 ms budget: %@ (median p99 %.3f ms)", median(p99s) < 4 ? "met" : "MISSED", median(p99s))) }
if !quietP99s.isEmpty {
    print(String(format: "   the same over the %d of %d bursts with under 1 %% stolen: %@ (median p99 %.3f ms)", quietP99s.count,
                 p99s.count, median(quietP99s) < 4 ? "met" : "MISSED", median(quietP99s)))
} else if !p99s.isEmpty {
    print("   no burst ran with under 1 % of the CPU stolen")
}

print()
print("(load average at the end: \(loadAverage()))")
try await nioGroup.shutdownGracefully()
try await nioPool.shutdownGracefully()
group.shutdown()
