import LoopKit
import Synchronization
import Testing

/// What lives on a loop and must end with it: observers run by the loop's shutdown, and the tasks they
/// resume, run in the final drain.
@Suite("Shutdown observers")
struct ShutdownObserverTests {
    final class Owner: Sendable {}

    @Test("observers run once, in registration order, after the work queued before the shutdown")
    func observersRunInOrderAfterQueuedWork() throws {
        let loop = try EventLoop()
        let trace = Mutex<[String]>([])
        let first = Owner(), second = Owner(), removed = Owner()
        #expect(loop.addShutdownObserver(ObjectIdentifier(first)) { trace.withLock { $0.append("first") } })
        #expect(loop.addShutdownObserver(ObjectIdentifier(second)) { trace.withLock { $0.append("second") } })
        #expect(loop.addShutdownObserver(ObjectIdentifier(removed)) { trace.withLock { $0.append("removed") } })
        loop.removeShutdownObserver(ObjectIdentifier(removed))
        try loop.enqueue { trace.withLock { $0.append("queued") } }
        loop.shutdown()  // on the loop's thread, outside an iteration: finishes now
        loop.shutdown()
        #expect(trace.withLock { $0 } == ["queued", "first", "second"])
    }

    @Test("leading observers run before the others, whenever registered, each kind in registration order")
    func leadingObserversRunFirst() throws {
        let loop = try EventLoop()
        let trace = Mutex<[String]>([])
        let pipe = Owner(), child = Owner(), laterPipe = Owner(), laterChild = Owner()
        _ = loop.addShutdownObserver(ObjectIdentifier(pipe)) { trace.withLock { $0.append("pipe") } }
        _ = loop.addShutdownObserver(ObjectIdentifier(child), leading: true) { trace.withLock { $0.append("child") } }
        _ = loop.addShutdownObserver(ObjectIdentifier(laterPipe)) { trace.withLock { $0.append("later pipe") } }
        _ = loop.addShutdownObserver(ObjectIdentifier(laterChild), leading: true) {
            trace.withLock { $0.append("later child") }
        }
        loop.shutdown()
        #expect(trace.withLock { $0 } == ["child", "later child", "pipe", "later pipe"])
    }

    @Test("an observer that unregisters a later one (a server closing its connections) stops that one running")
    func anObserverMayUnregisterALaterOne() throws {
        let loop = try EventLoop()
        let trace = Mutex<[String]>([])
        let server = Owner(), connection = Owner()
        _ = loop.addShutdownObserver(ObjectIdentifier(server)) {
            trace.withLock { $0.append("server closes its connection") }
            loop.removeShutdownObserver(ObjectIdentifier(connection))  // the connection ended, unregistered
        }
        _ = loop.addShutdownObserver(ObjectIdentifier(connection)) { trace.withLock { $0.append("connection") } }
        loop.shutdown()
        #expect(trace.withLock { $0 } == ["server closes its connection"])
    }

    @Test("a loop that has begun shutting down registers no observer")
    func registrationIsRefusedOnceShuttingDown() throws {
        let loop = try EventLoop()
        let late = Owner()
        let ran = Mutex(false)
        try loop.enqueue {
            loop.shutdown()  // inside an iteration: the shutdown finishes at its end
            #expect(!loop.addShutdownObserver(ObjectIdentifier(late)) { ran.withLock { $0 = true } })
        }
        _ = try loop.runOnce(blocking: false)
        #expect(!loop.isAcceptingWork)
        #expect(!ran.withLock { $0 })
    }

    @Test("a task the shutdown resumes runs to its end on the loop, in the final drain")
    func aTaskResumedByTheShutdownRunsInTheFinalDrain() throws {
        let loop = try EventLoop()
        let owner = Owner()
        let finishedOnLoop = Mutex<Bool?>(nil)
        let task = Task(executorPreference: loop) {
            await withUnsafeContinuation { (continuation: UnsafeContinuation<Void, Never>) in
                _ = loop.addShutdownObserver(ObjectIdentifier(owner)) { continuation.resume() }
            }
            finishedOnLoop.withLock { $0 = loop.isCurrent }
        }
        while loop.hasQueuedWork { _ = try loop.runOnce(blocking: false) }  // the task starts and suspends
        #expect(finishedOnLoop.withLock { $0 } == nil)
        loop.shutdown()
        #expect(finishedOnLoop.withLock { $0 } == true)
        _ = task
    }

    @Test("cleanup work is taken while the loop shuts down, where ordinary work is refused")
    func cleanupWorkRunsInTheFinalDrain() throws {
        let loop = try EventLoop()
        let trace = Mutex<[String]>([])
        let owner = Owner()
        _ = loop.addShutdownObserver(ObjectIdentifier(owner)) {
            #expect(throws: EventLoopError.shutDown) { try loop.enqueue {} }
            #expect(throws: Never.self) { try loop.enqueueCleanup { trace.withLock { $0.append("cleanup") } } }
            trace.withLock { $0.append("observer") }
        }
        loop.shutdown()
        #expect(trace.withLock { $0 } == ["observer", "cleanup"])
        #expect(throws: EventLoopError.shutDown) { try loop.enqueueCleanup {} }
    }
}
