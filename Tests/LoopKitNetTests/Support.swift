import LoopKit
@testable import LoopKitNet
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Runs `body` in a task whose executor is `loop`, as a connection handler runs.
func onLoop<T: Sendable>(_ loop: EventLoop, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
    try await Task(executorPreference: loop) { try await body() }.value
}

/// Reads from `connection` until `count` bytes have arrived (or the input ends).
func readBytes(_ count: Int, from connection: TCPConnection) async throws -> [UInt8] {
    var received: [UInt8] = []
    var iterator = connection.inbound.makeAsyncIterator()
    while received.count < count, let chunk = try await iterator.next() {
        received.append(contentsOf: chunk)
    }
    return received
}

/// Reads everything until the input ends.
func readToEnd(from connection: TCPConnection) async throws -> [UInt8] {
    var received: [UInt8] = []
    for try await chunk in connection.inbound { received.append(contentsOf: chunk) }
    return received
}

/// A callback echo: every byte read is written back (copied into the output), all consumed.
@Sendable func echoByCallbacks(_ connection: TCPConnection) {
    connection.onRead { bytes in
        try? connection.write(copying: bytes)
        return bytes.count
    }
}

/// The open file descriptors of this process.
func openFileDescriptorCount() -> Int {
    guard let directory = opendir("/proc/self/fd") else { return -1 }
    defer { closedir(directory) }
    var count = 0
    while readdir(directory) != nil { count += 1 }
    return count - 3  // ".", ".." and the directory's own descriptor
}

/// A value several tasks or threads record into.
final class Recorder<Value: Sendable>: Sendable {
    private let values = Mutex<[Value]>([])
    init() {}
    func record(_ value: Value) { values.withLock { $0.append(value) } }
    var all: [Value] { values.withLock { $0 } }
}
