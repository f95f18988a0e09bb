import LoopKit
@testable import LoopKitNet
import Synchronization
import TestSupport

#if canImport(Glibc)
import Glibc
#endif

/// Runs `body` in a task whose executor is `loop`, as a connection handler runs.
func onLoop<T: Sendable>(_ loop: EventLoop, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
    try await Task(executorPreference: loop) { try await body() }.value
}

/// Reads from `connection` until `count` bytes have arrived (or the input ends).
func readBytes(_ count: Int, from connection: Connection) async throws -> [UInt8] {
    var received: [UInt8] = []
    var iterator = connection.inbound.makeAsyncIterator()
    while received.count < count, let chunk = try await iterator.next() {
        received.append(contentsOf: chunk)
    }
    return received
}

/// Reads everything until the input ends.
func readToEnd(from connection: Connection) async throws -> [UInt8] {
    var received: [UInt8] = []
    for try await chunk in connection.inbound { received.append(contentsOf: chunk) }
    return received
}

/// A callback echo: every byte read is written back (copied into the output), all consumed.
@Sendable func echoByCallbacks(_ connection: Connection) {
    connection.onRead { bytes in
        try? connection.write(copying: bytes)
        return bytes.count
    }
}

/// The open file descriptors of this process.
func openFileDescriptorCount() -> Int { OpenDescriptors.count }

/// A value several tasks or threads record into.
final class Recorder<Value: Sendable>: Sendable {
    private let values = Lock<[Value]>([])  // LoopKit's lock: the thread sanitizer sees it (not Mutex)
    init() {}
    func record(_ value: Value) { values.withLock { $0.append(value) } }
    var all: [Value] { values.withLock { $0 } }
}

/// Waits (polling every millisecond, for at most `limit`, default 20 s) until `condition` holds; returns
/// whether it did. A wait for an event, not a timing threshold.
@discardableResult
func eventually(within limit: Duration = .seconds(20), _ condition: @Sendable () -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + limit
    while ContinuousClock.now < deadline {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(1))
    }
    return condition()
}

/// Reads a loop-confined value on the loop's thread (without blocking a cooperative thread).
func read<T: Sendable>(on loop: EventLoop, _ body: @escaping @Sendable () -> T) async throws -> T {
    try await onLoop(loop) { body() }
}

/// The descriptors this process holds on TCP sockets whose local or remote port is `port`: exact even
/// while other tests open sockets of their own.
func openDescriptors(onPort port: Int) -> Int {
    OpenDescriptors.tcpSockets { local, remote in local == port || remote == port }
}

/// A listening socket whose accept queue is full, so a connect to it gets no answer (the kernel drops the
/// SYNs): for connect timeouts, and for connects still under way when something else happens.
final class UnansweredAddress {
    let address: SocketAddress
    private let listener: Int32
    private var fillers: [Int32] = []

    init() throws {
        listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var raw = sockaddr_in()
        raw.sin_family = sa_family_t(AF_INET)
        raw.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let listener = listener
        _ = withUnsafePointer(to: &raw) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, length) } }
        listen(listener, 0)
        _ = withUnsafeMutablePointer(to: &raw) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) } }
        for _ in 0..<3 {
            let filler = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
            _ = withUnsafePointer(to: &raw) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(filler, $0, length) } }
            fillers.append(filler)
        }
        address = try SocketAddress(ipAddress: "127.0.0.1", port: Int(UInt16(bigEndian: raw.sin_port)))
    }

    /// Closes the listening socket and the connections that fill its queue.
    func close() {
        for filler in fillers { Glibc.close(filler) }
        fillers = []
        Glibc.close(listener)
    }
}

/// Starts `count` non-blocking connects to 127.0.0.1:`port` and returns how many completed their
/// handshake within `limit` (a safety net for a handshake that never completes, not a timing assertion);
/// closes every socket before returning.
func connectNonBlocking(_ count: Int, to port: Int, waitingAtMost limit: Duration) -> Int {
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var descriptors: [pollfd] = []
    for _ in 0..<count {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        _ = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        descriptors.append(pollfd(fd: fd, events: Int16(POLLOUT), revents: 0))
    }
    defer { for descriptor in descriptors { close(descriptor.fd) } }
    let clock = ContinuousClock()
    let deadline = clock.now + limit
    var completed = Set<Int32>()
    while completed.count < count, clock.now < deadline {
        var waiting = descriptors.filter { !completed.contains($0.fd) }
        _ = poll(&waiting, nfds_t(waiting.count), 100)
        for descriptor in waiting where descriptor.revents & Int16(POLLOUT) != 0 {
            var error: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            getsockopt(descriptor.fd, SOL_SOCKET, SO_ERROR, &error, &length)
            if error == 0 { completed.insert(descriptor.fd) }
        }
    }
    return completed.count
}
