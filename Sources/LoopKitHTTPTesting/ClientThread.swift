#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import LoopKit

/// The thread an in-memory ``HTTPTestClient`` lives on: its ``LoopKitTesting/LoopDriver`` is made there and
/// every step runs there, so the client works from whichever thread its test is on, before and after an
/// `await`. A synchronous call from another thread waits for its job; an `async` one suspends until it has
/// run. One job at a time, in the order they came: the steps stay deterministic.
final class ClientThread: @unchecked Sendable {  // every field is guarded by `mutex`, or read only on the thread
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private var jobs: [() -> Void] = []
    private var stopping = false
    private var thread = pthread_t()
    private var threadStarted = false

    init() throws(HTTPTestClientError) {
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(condition, nil)
        let box = Unmanaged.passRetained(self)
        let status = pthread_create(&thread, nil, { raw in
            let home = Unmanaged<ClientThread>.fromOpaque(raw!).takeRetainedValue()
            home.serve()
            return nil
        }, box.toOpaque())
        guard status == 0 else {
            box.release()
            throw .cannotStart("pthread_create: \(String(cString: strerror(status)))")
        }
        threadStarted = true
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    /// Whether the caller is this thread.
    var isCurrent: Bool { threadStarted && pthread_equal(pthread_self(), thread) != 0 }

    /// Runs `body` on the thread and returns what it returned; on the thread itself, or once stopped, at once.
    func run<T, Failure: Error>(_ body: @escaping () throws(Failure) -> T) throws(Failure) -> T {
        if isCurrent { return try body() }
        var result: Result<T, Failure>?
        let finished = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
        pthread_cond_init(finished, nil)
        defer {
            pthread_cond_destroy(finished)
            finished.deallocate()
        }
        let queued = enqueue { [mutex] in
            let outcome = Result { () throws(Failure) in try body() }
            pthread_mutex_lock(mutex)
            result = outcome
            pthread_cond_signal(finished)
            pthread_mutex_unlock(mutex)
        }
        guard queued else { return try body() }
        pthread_mutex_lock(mutex)
        while result == nil { pthread_cond_wait(finished, mutex) }
        pthread_mutex_unlock(mutex)
        return try result!.get()
    }

    /// Runs `body` on the thread, suspending the calling task (no thread waits) until it has run; on the
    /// thread itself, or once stopped, at once.
    ///
    /// A checked continuation, resumed in the runtime's own code: an unsafe one's resume is inlined here,
    /// where the thread sanitizer sees it touch the suspended task's frame with no edge to the task going on.
    nonisolated(nonsending) func perform<T>(_ body: @escaping () throws -> T) async throws -> T {
        if isCurrent { return try body() }
        let call = Unchecked(body)  // runs on the home thread alone while its caller is suspended
        #if LOOPKIT_TSAN
        // Swift's runtime does not tell the thread sanitizer that the resume happens before the task goes
        // on: say so, or every value the body made is reported.
        let handOver = SanitizerKey()
        #endif
        let outcome = await withCheckedContinuation { (continuation: CheckedContinuation<Unchecked<Result<T, any Error>>, Never>) in
            let job = {
                let outcome = Unchecked(Result { try call.value() })
                #if LOOPKIT_TSAN
                handOver.releasing()
                #endif
                continuation.resume(returning: outcome)
            }
            if !enqueue(job) { job() }
        }
        #if LOOPKIT_TSAN
        handOver.acquired()
        #endif
        return try outcome.value.get()
    }

    /// Ends the thread once its queued jobs have run, and waits for it (from another thread; on the thread
    /// itself, it ends when the current job returns).
    func stop() {
        pthread_mutex_lock(mutex)
        guard !stopping else {
            pthread_mutex_unlock(mutex)
            return
        }
        stopping = true
        pthread_cond_signal(condition)
        pthread_mutex_unlock(mutex)
        if !isCurrent { pthread_join(thread, nil) } else { pthread_detach(thread) }
    }

    /// Queues `job` for the thread; false once it stopped (the caller runs it itself).
    private func enqueue(_ job: @escaping () -> Void) -> Bool {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        guard !stopping else { return false }
        jobs.append(job)
        pthread_cond_signal(condition)
        return true
    }

    private func serve() {
        while true {
            pthread_mutex_lock(mutex)
            while jobs.isEmpty && !stopping { pthread_cond_wait(condition, mutex) }
            if jobs.isEmpty && stopping {
                pthread_mutex_unlock(mutex)
                return
            }
            let job = jobs.removeFirst()
            pthread_mutex_unlock(mutex)
            job()
        }
    }
}

/// A value handed to the client's thread and back while its sender waits: one thread touches it at a time.
struct Unchecked<Value>: @unchecked Sendable {  // the sender is suspended or blocked while the other side holds it
    let value: Value
    init(_ value: Value) { self.value = value }
}

/// A transport made and used on a ``ClientThread`` of its own: each call runs there, whichever thread
/// makes it (the test's, before or after an `await`).
final class HomedTransport: HTTPTestTransport {
    let home: ClientThread
    /// The transport, made, used and released on `home` only (a box, so that no job captures `self`:
    /// `deinit` shuts it down).
    private let slot = Slot()

    private final class Slot {
        var inner: (any HTTPTestTransport)?
    }

    init(_ make: @escaping () throws -> any HTTPTestTransport) throws {
        home = try ClientThread()
        let slot = slot
        do {
            try home.run { slot.inner = try make() }
        } catch {
            home.stop()
            throw error
        }
    }

    deinit { shutDown() }

    /// The transport, on its thread.
    private func onHome<T>(_ body: @escaping (any HTTPTestTransport) throws -> T) throws -> T {
        let slot = slot
        return try home.run {
            guard let inner = slot.inner else { throw HTTPTestClientError.closedEarly(received: "") }
            return try body(inner)
        }
    }

    /// `body` on the transport, on its thread; `ended` once the transport is shut down.
    private func onHome<T>(or ended: T, _ body: @escaping (any HTTPTestTransport) -> T) -> T {
        let slot = slot
        return home.run { slot.inner.map(body) ?? ended }
    }

    /// The in-memory transport inside, for the client's `driver`; nil when live or shut down.
    var inMemory: InMemoryTransport? {
        onHome(or: nil) { ($0 as? InMemoryTransport) ?? (($0 as? HTTP2Transport)?.inner as? InMemoryTransport) }
    }

    func send(_ bytes: [UInt8]) throws { try onHome { try $0.send(bytes) } }
    func takeReceived() -> [UInt8] { onHome(or: []) { $0.takeReceived() } }
    var isClosedByServer: Bool { onHome(or: true) { $0.isClosedByServer } }
    func waitForProgress() throws -> Bool { try onHome { try $0.waitForProgress() } }
    func runUntilIdle() throws { try onHome { try $0.runUntilIdle() } }
    func advance(by duration: Duration) throws { try onHome { try $0.advance(by: duration) } }
    func closeClient() throws { try onHome { try $0.closeClient() } }

    func shutDown() {
        let slot = slot
        let wasOpen = home.run { () -> Bool in
            guard let inner = slot.inner else { return false }
            inner.shutDown()
            slot.inner = nil
            return true
        }
        if wasOpen { home.stop() }
    }
}
