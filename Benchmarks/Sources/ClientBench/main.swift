// The HTTP client figures of `make bench-client` (Benchmarks/client-bench.sh): LoopKit's HTTPClient against
// AsyncHTTPClient, each on one event loop, against a `LoopDemo serve` started by the script.
//
//   ClientBench --client loopkit|loopkit-own|ahc --mode hello|download [--port P] [--count N] [--concurrency C]
//               [--path /files/big.bin] [--http2] [--tls-ca cert.pem] [--host localhost] [--observe]
//
// `hello`: C workers, each a chain of keep-alive `GET /hello` on the client's loop (the next one issued when
// the previous body is in), N requests in all after a warm-up of C × 20; every response is checked (200,
// "Hello, World!"). Prints `rps R p50_us A p99_us B cpu_us C requests N`: C is the client process's CPU time
// (user + system, getrusage) per request, a figure the machine's other load moves far less than R.
//
// `download`: one `GET PATH`, the body streamed and counted (never kept). Prints `mbps M bytes B
// cpu_ms_per_gib C rss_before_kib R hwm_after_kib H` (the client's CPU time per GiB; VmRSS before the request,
// VmHWM after: the growth the download caused).
//
// LoopKit: an `HTTPClient` on the one loop of a `LoopGroup(threads: 1)` — `loopkit` on libcurl's engine,
// `loopkit-own` on LoopKit's own HTTP/1.1 engine (`Configuration.engine = .automatic`, plain http only); the workers are tasks with that loop as
// their executor preference (`Task(executorPreference: loop)`), so requests, bodies and continuations stay on
// the loop's thread. `--http2`: `.http2PriorKnowledge` (h2c) on plain http, HTTP/2 through ALPN over https,
// and one connection, the workers' requests its concurrent streams.
//
// AsyncHTTPClient: one `MultiThreadedEventLoopGroup(numberOfThreads: 1)`, driven with its EventLoopFuture API on
// that loop (its fastest path, no task hops): each worker's next request starts in the previous one's
// callback on the loop. The download streams through an `HTTPClientResponseDelegate` that only counts.
// `--http2` (over https only: AsyncHTTPClient has no h2c) uses its `.automatic` version policy and one
// connection.
//
// `--observe` (LoopKit only): `Configuration.requestEnded` set to a closure that counts the summaries, the cost
// of the hook itself (the clock, curl's request callback and figures, the summary) without a metrics backend.
//
// Run the process pinned (`taskset -c 1`): the LoopKit loop thread, NIO's loop thread and everything else
// then share that core.
import AsyncHTTPClient
import Foundation
import HTTPTypes
import LoopKit
import LoopKitHTTPClient
import LoopKitNet
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import Synchronization

let arguments = Array(CommandLine.arguments.dropFirst())
func option(_ name: String) -> String? {
    arguments.firstIndex(of: name).flatMap { $0 + 1 < arguments.count ? arguments[$0 + 1] : nil }
}
func fail(_ message: String) -> Never {
    print("failed \(message)")
    fflush(nil)
    exit(1)
}

let client = option("--client") ?? "loopkit"
let mode = option("--mode") ?? "hello"
let port = option("--port").flatMap { Int($0) } ?? 8080
let count = option("--count").flatMap { Int($0) } ?? 200_000
let concurrency = option("--concurrency").flatMap { Int($0) } ?? 64
let path = option("--path") ?? "/files/big.bin"
let http2 = arguments.contains("--http2")
let caFile = option("--tls-ca")
let host = option("--host") ?? (caFile == nil ? "127.0.0.1" : "localhost")
let scheme = caFile == nil ? "http" : "https"
let observes = arguments.contains("--observe")
let summariesSeen = Atomic<Int>(0)
let authority = "\(host):\(port)"
let warmup = concurrency * 20
let expectedBody = Array("Hello, World!".utf8)

func now() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}

/// The process's user + system CPU time so far, in nanoseconds.
func cpuTime() -> UInt64 {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    let user = UInt64(usage.ru_utime.tv_sec) * 1_000_000_000 + UInt64(usage.ru_utime.tv_usec) * 1000
    let system = UInt64(usage.ru_stime.tv_sec) * 1_000_000_000 + UInt64(usage.ru_stime.tv_usec) * 1000
    return user + system
}

/// A field of /proc/self/status in KiB (`VmRSS`, `VmHWM`).
func status(_ field: String) -> Int {
    guard let text = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return -1 }
    for line in text.split(separator: "\n") where line.hasPrefix(field + ":") {
        return Int(line.split(separator: " ", omittingEmptySubsequences: true)[1]) ?? -1
    }
    return -1
}

/// Per-request latencies and the requests still to issue, owned by the client's loop thread (every worker
/// runs there), so plain storage behind a Mutex that is never contended.
final class Tally: Sendable {
    struct State {
        var remaining: Int
        var latencies: [UInt64] = []
        var finished = 0
        var failure: String?
    }
    let state: Mutex<State>
    let workers: Int
    init(requests: Int, workers: Int) {
        state = Mutex(State(remaining: requests))
        self.workers = workers
        state.withLock { $0.latencies.reserveCapacity(requests) }
    }
    /// Takes one request to issue; false when none is left.
    func take() -> Bool {
        state.withLock { state in
            guard state.remaining > 0, state.failure == nil else { return false }
            state.remaining -= 1
            return true
        }
    }
    func record(_ nanoseconds: UInt64) { state.withLock { $0.latencies.append(nanoseconds) } }
    func failed(_ message: String) { state.withLock { if $0.failure == nil { $0.failure = message } } }
    /// Counts a worker out; true for the last one.
    func workerDone() -> Bool { state.withLock { $0.finished += 1; return $0.finished == workers } }
}

func report(_ tally: Tally, elapsed: UInt64, cpu: UInt64) {
    let (latencies, failure) = tally.state.withLock { ($0.latencies.sorted(), $0.failure) }
    if let failure { fail(failure) }
    guard !latencies.isEmpty else { fail("no requests") }
    let rps = Double(latencies.count) / (Double(elapsed) / 1e9)
    let p50 = Double(latencies[latencies.count / 2]) / 1000
    let p99 = Double(latencies[min(latencies.count - 1, latencies.count * 99 / 100)]) / 1000
    let cpuPerRequest = Double(cpu) / 1000 / Double(latencies.count)
    print(String(format: "rps %.0f p50_us %.0f p99_us %.0f cpu_us %.1f requests %d", rps, p50, p99, cpuPerRequest, latencies.count))
}

/// The download's line: MB/s, the client's CPU milliseconds per GiB, the bytes, VmRSS before and VmHWM now.
func printDownload(bytes: Int, elapsed: UInt64, cpu: UInt64, rss: Int) {
    let mbps = Double(bytes) / 1e6 / (Double(elapsed) / 1e9)
    let cpuPerGiB = Double(cpu) / 1e6 / (Double(bytes) / Double(1 << 30))
    print(String(format: "mbps %.1f cpu_ms_per_gib %.0f bytes %d rss_before_kib %d hwm_after_kib %d", mbps, cpuPerGiB, bytes, rss, status("VmHWM")))
}

// MARK: LoopKit

func runLoopKit() {
    let group: LoopGroup
    do { group = try LoopGroup(threads: 1, name: "client") } catch { fail("LoopGroup: \(error)") }
    let loop = group.loops[0]
    var configuration = HTTPClient.Configuration()
    configuration.decompression = .disabled
    configuration.redirects = .disallow
    configuration.maximumConnectionsPerHost = http2 ? 1 : concurrency
    configuration.maximumIdleConnections = concurrency
    if http2 { configuration.httpVersion = caFile == nil ? .http2PriorKnowledge : .automatic } else { configuration.httpVersion = .http1Only }
    if let caFile { configuration.tls.caFile = caFile }
    if observes { configuration.requestEnded = { _ in summariesSeen.add(1, ordering: .relaxed) } }
    configuration.engine = client == "loopkit-own" ? .automatic : .curl
    let httpClient = LoopKitHTTPClient.HTTPClient(on: loop, configuration: configuration)
    let done = DispatchSemaphore(value: 0)

    switch mode {
    case "hello":
        let request = HTTPRequest(method: .get, scheme: scheme, authority: authority, path: "/hello")
        // One batch: W workers on the loop, each issuing requests until the tally runs out.
        @Sendable func batch(_ tally: Tally) -> UInt64 {
            let started = now()
            for _ in 0..<tally.workers {
                Task(executorPreference: loop) {
                    while tally.take() {
                        let begin = now()
                        do {
                            let response = try await httpClient.execute(request)
                            let body = try await response.collect(upTo: 1 << 16)
                            guard response.head.status == .ok, body.count == expectedBody.count else {
                                tally.failed("status \(response.head.status.code), \(body.count) bytes")
                                break
                            }
                            tally.record(now() - begin)
                        } catch {
                            tally.failed("\(error)")
                            break
                        }
                    }
                    if tally.workerDone() { done.signal() }
                }
            }
            done.wait()
            return now() - started
        }
        _ = batch(Tally(requests: warmup, workers: concurrency))
        let tally = Tally(requests: count, workers: concurrency)
        let cpu = cpuTime()
        let elapsed = batch(tally)
        report(tally, elapsed: elapsed, cpu: cpuTime() - cpu)
    case "download":
        let request = HTTPRequest(method: .get, scheme: scheme, authority: authority, path: path)
        let result = Mutex<(bytes: Int, elapsed: UInt64, rss: Int, failure: String?)>((0, 0, 0, nil))
        let cpu = cpuTime()
        Task(executorPreference: loop) {
            let rss = status("VmRSS")
            let begin = now()
            var bytes = 0
            do {
                let response = try await httpClient.execute(request)
                guard response.head.status == .ok else { throw UnexpectedStatus(code: response.head.status.code) }
                for try await chunk in response.body { bytes += chunk.count }
                let elapsed = now() - begin
                result.withLock { $0 = (bytes, elapsed, rss, nil) }
            } catch {
                result.withLock { $0.failure = "\(error)" }
            }
            done.signal()
        }
        done.wait()
        let (bytes, elapsed, rss, failure) = result.withLock { $0 }
        if let failure { fail(failure) }
        printDownload(bytes: bytes, elapsed: elapsed, cpu: cpuTime() - cpu, rss: rss)
    default: fail("unknown mode \(mode)")
    }
    httpClient.shutdown()
    group.shutdown()
}

// MARK: AsyncHTTPClient

/// A response that was not 200.
struct UnexpectedStatus: Error { let code: Int }

/// Counts a streamed body, on the client's loop; keeps nothing.
// @unchecked Sendable: AsyncHTTPClient calls every method on the request's one event loop, so the counters are
// only ever touched from that thread.
final class CountingDelegate: HTTPClientResponseDelegate, @unchecked Sendable {
    typealias Response = Int
    var bytes = 0
    var status: HTTPResponseStatus = .ok
    func didReceiveHead(task: AsyncHTTPClient.HTTPClient.Task<Int>, _ head: HTTPResponseHead) -> EventLoopFuture<Void> {
        status = head.status
        return task.eventLoop.makeSucceededVoidFuture()
    }
    func didReceiveBodyPart(task: AsyncHTTPClient.HTTPClient.Task<Int>, _ buffer: ByteBuffer) -> EventLoopFuture<Void> {
        bytes += buffer.readableBytes
        return task.eventLoop.makeSucceededVoidFuture()
    }
    func didFinishRequest(task: AsyncHTTPClient.HTTPClient.Task<Int>) throws -> Int {
        guard status == .ok else { throw UnexpectedStatus(code: Int(status.code)) }
        return bytes
    }
}

func runAHC() {
    let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    let loop = group.next()
    var configuration = AsyncHTTPClient.HTTPClient.Configuration()
    configuration.redirectConfiguration = .disallow
    configuration.decompression = .disabled
    configuration.httpVersion = http2 ? .automatic : .http1Only
    configuration.connectionPool = .init(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: concurrency)
    if let caFile {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .file(caFile)
        configuration.tlsConfiguration = tls
    }
    let httpClient = AsyncHTTPClient.HTTPClient(eventLoopGroupProvider: .shared(group), configuration: configuration)
    let done = DispatchSemaphore(value: 0)
    let url = "\(scheme)://\(authority)"

    switch mode {
    case "hello":
        let request: AsyncHTTPClient.HTTPClient.Request
        do { request = try .init(url: url + "/hello") } catch { fail("request: \(error)") }
        // One worker: issues a request, and from its callback on the loop the next, until the tally runs out.
        @Sendable func work(_ tally: Tally) {
            guard tally.take() else {
                if tally.workerDone() { done.signal() }
                return
            }
            let begin = now()
            httpClient.execute(request: request, eventLoop: .delegateAndChannel(on: loop)).whenComplete { result in
                switch result {
                case .success(let response):
                    guard response.status == .ok, response.body?.readableBytes == expectedBody.count else {
                        tally.failed("status \(response.status.code), \(response.body?.readableBytes ?? 0) bytes")
                        if tally.workerDone() { done.signal() }
                        return
                    }
                    tally.record(now() - begin)
                    work(tally)
                case .failure(let error):
                    tally.failed("\(error)")
                    if tally.workerDone() { done.signal() }
                }
            }
        }
        @Sendable func batch(_ tally: Tally) -> UInt64 {
            let started = now()
            loop.execute { for _ in 0..<tally.workers { work(tally) } }
            done.wait()
            return now() - started
        }
        _ = batch(Tally(requests: warmup, workers: concurrency))
        let tally = Tally(requests: count, workers: concurrency)
        let cpu = cpuTime()
        let elapsed = batch(tally)
        report(tally, elapsed: elapsed, cpu: cpuTime() - cpu)
    case "download":
        let request: AsyncHTTPClient.HTTPClient.Request
        do { request = try .init(url: url + path) } catch { fail("request: \(error)") }
        let rss = status("VmRSS")
        let cpu = cpuTime()
        let begin = now()
        let bytes: Int
        do {
            bytes = try httpClient.execute(request: request, delegate: CountingDelegate(), eventLoop: .delegateAndChannel(on: loop)).wait()
        } catch { fail("\(error)") }
        let elapsed = now() - begin
        printDownload(bytes: bytes, elapsed: elapsed, cpu: cpuTime() - cpu, rss: rss)
    default: fail("unknown mode \(mode)")
    }
    do { try httpClient.syncShutdown() } catch { fail("shutdown: \(error)") }
    do { try group.syncShutdownGracefully() } catch { fail("group shutdown: \(error)") }
}

switch client {
case "loopkit", "loopkit-own": runLoopKit()
case "ahc": runAHC()
default: fail("unknown client \(client)")
}
