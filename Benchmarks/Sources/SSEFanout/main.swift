// Server-sent events fan-out, the third figure of `make bench-ws`: one job's progress served to many
// subscribers by one LoopKit loop.
//
//   SSEFanout [--subscribers 1000] [--items 1500000]
//
// One `LoopGroup(threads: 1)` runs an `HTTPServer` whose `GET /events` answers
// `.progressEvents(job.progress)` (LoopKitHTTP's own response, unchanged). The job is `loop.process` over
// ITEMS items of about 1 µs of work each with a 1 ms budget per iteration, as `LoopDemo serve`'s jobs. So
// that every subscriber sees the job from its start, each request's handler waits (an async gate) until all
// SUBSCRIBERS requests have arrived; then the job starts on the loop and every handler returns its response.
//
// The subscribers are plain sockets read with poll(2) on a thread of their own, pinned to core 1 (run the
// process with `taskset -c 0` so the loop stays on core 0). They parse the event stream: each `data:` line's
// `"completed"` count names the job state it carries; each subscriber ends at its `finished` event.
//
// On the loop, a probe re-enqueues itself with `enqueue` (work enqueued during an iteration runs in the next
// one), so the gaps between its runs are the lengths of the loop's iterations; `loop.iteration` counts them.
// The same job runs once before and once after with no subscriber, for the job's time alone.
//
// The iteration in which the gated handlers return answers all SUBSCRIBERS requests at once (response heads
// written, streams started): a burst of requests, not the fan-out. Its length is printed on its own
// (`answering_iterations_ms`: that iteration and the two after it, where the streams take their first steps),
// and `longest_iteration_ms` of the fan-out run is the longest of the others.
//
// Prints a few `key value...` lines (see `report`).
import Foundation
import LoopKit
import LoopKitHTTP
import Logging
import Synchronization

let arguments = Array(CommandLine.arguments.dropFirst())
func option(_ name: String) -> String? {
    arguments.firstIndex(of: name).flatMap { $0 + 1 < arguments.count ? arguments[$0 + 1] : nil }
}
let subscriberCount = option("--subscribers").flatMap { Int($0) } ?? 1000
let itemCount = option("--items").flatMap { Int($0) } ?? 1_500_000
let budget = ProcessingBudget.time(.milliseconds(1))

func fail(_ message: String) -> Never {
    print("failed \(message)")
    fflush(nil)
    exit(1)
}

func now() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}

/// Pins the calling thread to `core` with glibc's `sched_setaffinity` (looked up with `dlsym`: Swift does not
/// see it, as glibc declares it only under `_GNU_SOURCE`), on a 1024-bit CPU set as `cpu_set_t` is.
func pin(to core: Int) {
    typealias SetAffinity = @convention(c) (Int32, Int, UnsafeRawPointer) -> Int32
    guard let symbol = dlsym(dlopen(nil, RTLD_NOW), "sched_setaffinity") else { fail("no sched_setaffinity") }
    var set = [UInt8](repeating: 0, count: 128)
    set[core / 8] = UInt8(1 << (core % 8))
    guard unsafeBitCast(symbol, to: SetAffinity.self)(0, set.count, set) == 0 else { fail("sched_setaffinity: errno \(errno)") }
}

// MARK: Work

/// About 1 µs of work per item, calibrated as the NIO peer's and LoopDemo's SyntheticWork.
struct Work: Sendable {
    let rounds: Int
    @inline(never)
    func callAsFunction(_ item: Int) -> UInt64 {
        var x = UInt64(truncatingIfNeeded: item) &+ 0x9E37_79B9_7F4A_7C15
        for _ in 0..<rounds {
            x ^= x >> 30
            x &*= 0xBF58_476D_1CE4_E5B9
            x ^= x >> 27
        }
        return x
    }

    static func calibrated(nanoseconds: Double) -> Work {
        let probe = Work(rounds: 200)
        var sink: UInt64 = 0
        var best = UInt64.max
        for _ in 0..<3 {
            let start = now()
            for item in 0..<500 { sink &+= probe(item) }
            best = min(best, now() - start)
        }
        let perRound = max(Double(best) / (500 * 200), 0.05)
        return Work(rounds: max(1, Int(nanoseconds / perRound)) | Int(sink & 0))
    }
}

// MARK: The loop side

/// What one run of the job saw on the loop. Written on the loop thread only, read after the job ends.
final class LoopRecord: @unchecked Sendable {
    var gaps: [UInt64] = []
    /// The loop iteration each gap ended in (`gaps[i]` ended in `gapIterations[i]`).
    var gapIterations: [UInt64] = []
    /// The iteration in which the last gated request handler resumed (0: none, a run without subscribers).
    var answeringIteration: UInt64 = 0
    var lastProbe: UInt64 = 0
    var running = true
    var startedAt: UInt64 = 0
    var endedAt: UInt64 = 0
    var firstIteration: UInt64 = 0
    var lastIteration: UInt64 = 0
    let ended = DispatchSemaphore(value: 0)
}

/// Runs the self-re-enqueuing probe on `loop` until `record.running` is false. Call on the loop thread.
func probe(_ loop: EventLoop, _ record: LoopRecord) {
    let time = now()
    if record.lastProbe != 0 {
        record.gaps.append(time - record.lastProbe)
        record.gapIterations.append(loop.iteration)
    }
    record.lastProbe = time
    guard record.running else { return }
    do { try loop.enqueue { probe(loop, record) } } catch { fail("enqueue: \(error)") }
}

/// Starts the job on `loop` with the probe; returns the job and its record (the job's completion signals it).
func startJob(on loop: EventLoop, work: Work) -> (ProcessingJob, LoopRecord) {
    let record = LoopRecord()
    do {
        let job = try loop.invokeAndWait { () throws -> ProcessingJob in
            let sink = LoopBound(UInt64(0), on: loop)
            record.firstIteration = loop.iteration
            record.startedAt = now()
            probe(loop, record)
            return try loop.process(0..<itemCount, budget: budget, each: { item in sink.value &+= work(item) },
                                    completion: { _ in
                record.endedAt = now()
                record.lastIteration = loop.iteration
                record.running = false
                record.ended.signal()
            })
        }
        return (job, record)
    } catch {
        fail("cannot start the job: \(error)")
    }
}

/// Hands the job to the waiting request handlers once all have arrived.
final class Gate: Sendable {
    private let state = Mutex<(waiting: [CheckedContinuation<ProcessingJob, Never>], job: ProcessingJob?)>(([], nil))

    var waitingCount: Int { state.withLock { $0.waiting.count } }

    func job() async -> ProcessingJob {
        await withCheckedContinuation { continuation in
            let ready = state.withLock { state -> ProcessingJob? in
                if let job = state.job { return job }
                state.waiting.append(continuation)
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }

    func open(with job: ProcessingJob) {
        let waiting = state.withLock { state in
            state.job = job
            defer { state.waiting = [] }
            return state.waiting
        }
        for continuation in waiting { continuation.resume(returning: job) }
    }
}

// MARK: The subscribers

/// What the subscribers read: events per subscriber and deliveries per job state (`completed` count).
final class SubscriberTally: @unchecked Sendable {
    var eventsPerSubscriber: [Int] = []
    var deliveriesPerState: [Int: Int] = [:]
    var failure: String?
    let done = DispatchSemaphore(value: 0)
}

/// Connects `count` sockets to the server and sends `GET /events` on each (blocking, in order).
func connectSubscribers(port: Int, count: Int) -> [Int32] {
    let request = Array("GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".utf8)
    return (0..<count).map { index in
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard fd >= 0, connected == 0 else { fail("subscriber \(index + 1): connect errno \(errno)") }
        guard request.withUnsafeBytes({ write(fd, $0.baseAddress!, $0.count) }) == request.count else {
            fail("subscriber \(index + 1): write errno \(errno)")
        }
        return fd
    }
}

/// Reads every subscriber's stream until each has had its `finished` event (poll(2), one thread).
func readSubscribers(_ sockets: [Int32], into tally: SubscriberTally) {
    let dataPrefix = Array("data: ".utf8)
    let completedKey = Array("\"completed\":".utf8)
    let finishedLine = Array("event: finished".utf8)
    var carry = [[UInt8]](repeating: [], count: sockets.count)
    var events = [Int](repeating: 0, count: sockets.count)
    var finished = [Bool](repeating: false, count: sockets.count)
    var complete = [Bool](repeating: false, count: sockets.count)
    var open = sockets.count
    var pollSet = sockets.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
    var buffer = [UInt8](repeating: 0, count: 65536)
    let deadline = now() + 120_000_000_000
    while open > 0 {
        guard now() < deadline else { tally.failure = "subscribers not finished within 120 s"; break }
        let ready = poll(&pollSet, nfds_t(pollSet.count), 1000)
        if ready < 0 && errno == EINTR { continue }
        for index in pollSet.indices where pollSet[index].revents != 0 {
            let n = read(sockets[index], &buffer, buffer.count)
            guard n > 0 else {
                tally.failure = "subscriber \(index + 1): stream closed before its finished event"
                pollSet[index].fd = -1
                open -= 1
                continue
            }
            carry[index] += buffer[0..<n]
            var lineStart = carry[index].startIndex
            while let newline = carry[index][lineStart...].firstIndex(of: 10) {
                let line = carry[index][lineStart..<newline]
                lineStart = newline + 1
                if line.starts(with: dataPrefix) {
                    events[index] += 1
                    if finished[index] { complete[index] = true }
                    if let key = line.firstRange(of: completedKey) {
                        var completed = 0
                        for byte in line[key.upperBound...] {
                            guard byte >= 48 && byte <= 57 else { break }
                            completed = completed * 10 + Int(byte - 48)
                        }
                        tally.deliveriesPerState[completed, default: 0] += 1
                    }
                } else if line.starts(with: finishedLine) {
                    finished[index] = true
                }
            }
            carry[index].removeSubrange(..<lineStart)
            // The finished event's data line has been read: this subscriber is done.
            if complete[index] {
                pollSet[index].fd = -1
                open -= 1
            }
        }
    }
    tally.eventsPerSubscriber = events
    for fd in sockets { close(fd) }
}

// MARK: Run

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    guard !sorted.isEmpty else { return 0 }
    return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
}

func percentile(_ values: [UInt64], _ p: Double) -> UInt64 {
    let sorted = values.sorted()
    guard !sorted.isEmpty else { return 0 }
    return sorted[min(sorted.count - 1, Int((Double(sorted.count) * p).rounded(.up)) - 1)]
}

/// "job T ms, iterations N, longest iteration X ms, p99 iteration Y ms, median iteration Z ms", and for a
/// run with subscribers the iterations that answered their requests on their own: the probe's gaps ending
/// in the iteration where the last handler resumed and the two after it (the answering may fall before or
/// after the probe in the drain, and each answered stream's task takes its first steps in the next drain).
func describe(_ record: LoopRecord) -> String {
    let ms = { (ns: UInt64) in String(format: "%.2f", Double(ns) / 1e6) }
    let answering = record.answeringIteration
    let isAnswering = { (index: Int) in
        answering != 0 && (answering...answering + 2).contains(record.gapIterations[index])
    }
    let others = record.gaps.indices.filter { !isAnswering($0) }.map { record.gaps[$0] }
    let answeringGaps = record.gaps.indices.filter(isAnswering).map { ms(record.gaps[$0]) }
    return "job_ms \(ms(record.endedAt - record.startedAt)) iterations \(record.lastIteration - record.firstIteration) "
        + "longest_iteration_ms \(ms(others.max() ?? 0)) p99_iteration_ms \(ms(percentile(others, 0.99))) "
        + "median_iteration_ms \(ms(percentile(others, 0.5)))"
        + (answeringGaps.isEmpty ? "" : " answering_iterations_ms \(answeringGaps.joined(separator: "/"))")
        + " longest_at " + record.gaps.indices.filter { !isAnswering($0) }.sorted { record.gaps[$0] > record.gaps[$1] }
            .prefix(3).map { "\(record.gapIterations[$0] - record.firstIteration):\(ms(record.gaps[$0]))" }.joined(separator: ",")

}

var limit = rlimit()
getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit)
limit.rlim_cur = limit.rlim_max
setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit)

let work = Work.calibrated(nanoseconds: 1_000)
let group = try LoopGroup(threads: 1, name: "sse-fanout")
let loop = group.loops[0]
let gate = Gate()
/// The fan-out run's record, set before the gate opens; the handlers (on the loop) mark its answering iteration.
let answered = Mutex<(count: Int, record: LoopRecord?)>((0, nil))
var router = HTTPRouter()
router.get("/events", .inTask) { request in
    let job = await gate.job()
    let iteration = request.loop.iteration
    answered.withLock { answered in
        answered.count += 1
        if answered.count == subscriberCount { answered.record?.answeringIteration = iteration }
    }
    return .progressEvents(job.progress)
}
var configuration = HTTPServer.Configuration()
configuration.backlog = 4096
configuration.idleTimeout = .seconds(120)
let server = HTTPServer(group: group, configuration: configuration, router: router,
                        logger: Logger(label: "sse-fanout", factory: { _ in SwiftLogNoOpLogHandler() }))
let port = try server.start()

// The job alone.
let (_, before) = startJob(on: loop, work: work)
before.ended.wait()
print("alone-before \(describe(before))")
fflush(nil)

// The job with the subscribers.
let sockets = connectSubscribers(port: port, count: subscriberCount)
let waitDeadline = now() + 30_000_000_000
while gate.waitingCount < subscriberCount {
    guard now() < waitDeadline else { fail("only \(gate.waitingCount) of \(subscriberCount) requests arrived within 30 s") }
    usleep(5_000)
}
let tally = SubscriberTally()
let reader = Thread {
    pin(to: 1)
    readSubscribers(sockets, into: tally)
    tally.done.signal()
}
reader.start()
let (job, fanout) = startJob(on: loop, work: work)
answered.withLock { $0.record = fanout }
gate.open(with: job)
fanout.ended.wait()
tally.done.wait()
if let failure = tally.failure { fail(failure) }
let deliveries = tally.eventsPerSubscriber.reduce(0, +)
let perSubscriber = tally.eventsPerSubscriber.map(Double.init)
let perState = tally.deliveriesPerState.values.map(Double.init)
print("fanout \(describe(fanout))")
print("fanout-deliveries subscribers \(subscriberCount) deliveries \(deliveries) "
    + "per_subscriber_min \(Int(perSubscriber.min() ?? 0)) per_subscriber_median \(Int(median(perSubscriber))) "
    + "per_subscriber_max \(Int(perSubscriber.max() ?? 0)) states \(perState.count) "
    + "per_state_median \(Int(median(perState))) per_state_max \(Int(perState.max() ?? 0)) "
    + String(format: "per_iteration_mean %.1f", Double(deliveries) / Double(max(1, fanout.lastIteration - fanout.firstIteration))))
fflush(nil)

// The job alone again.
let (_, after) = startJob(on: loop, work: work)
after.ended.wait()
print("alone-after \(describe(after))")
print("work items \(itemCount) budget_ms 1 rounds_per_item \(work.rounds)")
fflush(nil)
exit(0)
