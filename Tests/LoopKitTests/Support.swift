import Foundation
import LoopKit

/// Runs `body` on a new thread and waits for it to finish.
func onAnotherThread<T: Sendable>(_ body: @escaping @Sendable () -> T) -> T {
    let box = ResultBox<T>()
    let done = DispatchSemaphore(value: 0)
    let thread = Thread {
        box.set(body())
        done.signal()
    }
    thread.start()
    done.wait()
    return box.take()
}

/// Starts `body` on a new thread; the returned semaphore is signalled when it ends.
@discardableResult
func startThread(_ body: @escaping @Sendable () -> Void) -> DispatchSemaphore {
    let done = DispatchSemaphore(value: 0)
    Thread {
        body()
        done.signal()
    }.start()
    return done
}

final class ResultBox<T: Sendable>: Sendable {
    private let storage = NSLock()
    nonisolated(unsafe) private var value: T?
    func set(_ value: T) { storage.withLock { self.value = value } }
    func get() -> T { storage.withLock { value! } }
    /// Hands the value over, keeping no reference to it.
    func take() -> T { storage.withLock { defer { value = nil }; return value! } }
}

/// A pipe whose read end becomes readable once `makeReadable()` writes a byte.
struct TestPipe {
    let readEnd: Int32
    let writeEnd: Int32
    init() {
        var fds: [Int32] = [0, 0]
        precondition(pipe(&fds) == 0)
        readEnd = fds[0]
        writeEnd = fds[1]
    }
    func makeReadable() { var byte: UInt8 = 1; _ = write(writeEnd, &byte, 1) }
    func drain() { var byte: UInt8 = 0; _ = read(readEnd, &byte, 1) }
    func close() { Foundation.close(readEnd); Foundation.close(writeEnd) }
}

/// Spins (yielding the CPU, never sleeping for a set time) until `condition` holds.
func spin(until condition: () -> Bool) {
    while !condition() { sched_yield() }
}
