import Dispatch
import LoopKit
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

// A program whose main thread runs EventLoop.main, for the main-loop tests (a test process's own main
// thread belongs to the test runner). `MainLoopProbe <scenario>` prints one line per event, `iteration
// label`, and exits 0; a failed expectation inside a scenario stops the process.

/// Lines printed in order, from any thread.
final class Trace: Sendable {
    private let lines = Mutex<[String]>([])
    func record(_ label: String) {
        lines.withLock { $0.append("\(EventLoop.main.iteration) \(label)") }
    }
    func printAll() {
        for line in lines.withLock({ $0 }) { print(line) }
    }
}

let trace = Trace()
let loop = EventLoop.main
let scenario = CommandLine.arguments.dropFirst().first ?? ""

switch scenario {
case "phases":
    // R12: before the first iteration, one of each kind of work; then three stepped iterations.
    try loop.enqueue {
        trace.record("drain: queued before the iteration")
        DispatchQueue.main.async { trace.record("main queue: queued from the drain") }
    }
    try loop.schedule(after: .zero) {
        trace.record("timer: due")
        DispatchQueue.main.async { trace.record("main queue: queued from a timer") }
    }
    DispatchQueue.main.async {
        trace.record("main queue: queued before the iteration")
        DispatchQueue.main.async { trace.record("main queue: queued from the main queue") }
        try? loop.enqueue { trace.record("drain: queued from the main queue") }
    }
    Task { @MainActor in trace.record("main actor: task started before the iteration") }
    for _ in 0..<3 { try loop.runOnce(blocking: false) }

case "isolation":
    // Inside the main loop's callbacks, the main actor's isolation holds.
    try loop.enqueue {
        MainActor.assertIsolated("a queued job on the main loop")
        let onMainActor = MainActor.assumeIsolated { true }
        trace.record("drain: main actor isolated \(onMainActor)")
    }
    try loop.schedule(after: .zero) {
        MainActor.assertIsolated("a timer on the main loop")
        trace.record("timer: main actor isolated")
    }
    for _ in 0..<2 { try loop.runOnce(blocking: false) }

case "wake":
    // Main-queue work from another thread wakes a main loop waiting in its poll; a @MainActor task hops
    // off the main actor and back, and the loop keeps running it until it stops the loop.
    let other = Thread {
        DispatchQueue.main.async { trace.record("main queue: from another thread") }
        Task { @MainActor in
            trace.record("main actor: from another thread")
            let away = await Task.detached { EventLoop.main.isCurrent }.value
            trace.record("main actor: back after a detached task that saw isCurrent \(away)")
            loop.stop()
        }
    }
    other.start()
    try loop.run()
    other.join()

case "first-use-off-main":
    // Asked for first on another thread, the main loop still belongs to the main thread.
    let seen = Mutex<(Bool, Bool)?>(nil)
    let other = Thread {
        let loop = EventLoop.main
        seen.withLock { $0 = (loop.isCurrent, loop.isMain) }
    }
    other.start()
    other.join()
    let (offMain, isMain) = seen.withLock { $0! }
    trace.record("other thread: isCurrent \(offMain), isMain \(isMain)")
    trace.record("main thread: isCurrent \(EventLoop.main.isCurrent)")

default:
    print("unknown scenario: \(scenario)")
    exit(2)
}
trace.printAll()

/// A joinable thread, without Foundation.
final class Thread: Sendable {
    private let body: @Sendable () -> Void
    private let handle = Mutex<pthread_t?>(nil)
    init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    func start() {
        let box = Unmanaged.passRetained(self).toOpaque()
        var thread = pthread_t()
        pthread_create(&thread, nil, { raw in
            let me = Unmanaged<Thread>.fromOpaque(raw!).takeRetainedValue()
            me.body()
            return nil
        }, box)
        handle.withLock { $0 = thread }
    }
    func join() {
        if let thread = handle.withLock({ $0 }) { pthread_join(thread, nil) }
    }
}
