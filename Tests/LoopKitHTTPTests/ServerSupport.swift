#if canImport(Glibc)
import Glibc
#endif
import HTTPTypes
import Logging
import LoopKit
import Synchronization
import TestSupport
import Testing
@testable import LoopKitHTTP

/// A response as read off the wire by ``RawClient``.
struct WireResponse {
    var status: Int
    var fields: [(name: String, value: String)]
    var body: [UInt8]
    var text: String { String(decoding: body, as: UTF8.self) }

    func field(_ name: String) -> String? {
        fields.first { $0.name.lowercased() == name.lowercased() }?.value
    }
}

/// A blocking TCP client that speaks raw bytes, so tests can send anything, split anywhere.
final class RawClient {
    let fd: Int32
    var buffer: [UInt8] = []

    init(port: Int) throws {
        fd = try Self.connectedSocket(port: port)
    }

    /// A blocking socket connected to 127.0.0.1:`port`. A failed connect closes the socket here, before
    /// any `RawClient` exists: a throwing init of a fully initialised class would run `deinit` and close
    /// the descriptor a second time (by then maybe another test's socket).
    private static func connectedSocket(port: Int) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        // A safety net against a hung test, not a timing assertion: long enough for the README's 1M-item job
        // under the thread sanitizer on a loaded machine (it took more than 20 s there).
        var timeout = timeval(tv_sec: 120, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard result == 0 else {
            let code = errno
            Glibc.close(fd)
            throw ClientError.connectFailed(code)
        }
        return fd
    }

    deinit { Glibc.close(fd) }

    enum ClientError: Error { case connectFailed(Int32), closedEarly, timedOut, malformed(String) }

    /// The last read gave up at the safety timeout (rather than seeing the end of the stream).
    private(set) var lastReadTimedOut = false
    /// The last read found the connection reset (ECONNRESET), not ended with a FIN.
    private(set) var lastReadWasReset = false

    /// Why a read found no more bytes: the end of the stream, or the safety timeout.
    private var endOfInput: ClientError { lastReadTimedOut ? .timedOut : .closedEarly }

    func send(_ text: String) { send(Array(text.utf8)) }

    func send(_ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if sent < 0 && errno == EINTR { continue }  // a signal for the process landed on this thread
            if sent <= 0 { return }
            offset += sent
        }
    }

    /// Reads more bytes into the buffer; false at end of stream (or error).
    @discardableResult
    func fill() -> Bool {
        var chunk = [UInt8](repeating: 0, count: 65536)
        var count: Int
        // A signal for the process (another test's SIGCHLD or SIGUSR1) may land on this thread: read again.
        repeat {
            count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        } while count < 0 && errno == EINTR
        lastReadTimedOut = count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)
        lastReadWasReset = count < 0 && errno == ECONNRESET
        guard count > 0 else { return false }
        buffer += chunk[..<count]
        return true
    }

    private func readLine() throws -> String {
        while true {
            if let lf = buffer.firstIndex(of: UInt8(ascii: "\n")), lf > 0, buffer[lf - 1] == UInt8(ascii: "\r") {
                let line = String(decoding: buffer[..<(lf - 1)], as: UTF8.self)
                buffer.removeFirst(lf + 1)
                return line
            }
            guard fill() else { throw endOfInput }
        }
    }

    private func readExactly(_ count: Int) throws -> [UInt8] {
        while buffer.count < count { guard fill() else { throw endOfInput } }
        let bytes = Array(buffer[..<count])
        buffer.removeFirst(count)
        return bytes
    }

    /// Reads one response. `bodyless` for HEAD requests (the fields describe a body that is not sent).
    func readResponse(bodyless: Bool = false) throws -> WireResponse {
        let statusLine = try readLine()
        let parts = statusLine.split(separator: " ", maxSplits: 2)
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/1."), let status = Int(parts[1]) else {
            throw ClientError.malformed(statusLine)
        }
        var fields: [(String, String)] = []
        while true {
            let line = try readLine()
            if line.isEmpty { break }
            guard let colon = line.firstIndex(of: ":") else { throw ClientError.malformed(line) }
            fields.append((String(line[..<colon]), line[line.index(after: colon)...].trimmingSpaces))
        }
        var response = WireResponse(status: status, fields: fields, body: [])
        if bodyless || status < 200 || status == 204 || status == 304 { return response }
        if let length = response.field("Content-Length").flatMap({ Int($0) }) {
            response.body = try readExactly(length)
        } else if response.field("Transfer-Encoding")?.lowercased() == "chunked" {
            while true {
                let sizeLine = try readLine()
                guard let size = Int(sizeLine, radix: 16) else { throw ClientError.malformed(sizeLine) }
                if size == 0 {
                    while try !readLine().isEmpty {}
                    break
                }
                response.body += try readExactly(size)
                _ = try readExactly(2)
            }
        } else {
            while fill() {}
            response.body = buffer
            buffer = []
        }
        return response
    }

    /// Sends a request and reads its response.
    func exchange(_ request: String, bodyless: Bool = false) throws -> WireResponse {
        send(request)
        return try readResponse(bodyless: bodyless)
    }

    /// Whether the server has closed the connection (all buffered bytes consumed, then end of stream).
    func isClosedByServer() -> Bool {
        guard buffer.isEmpty else { return false }
        return !fill()
    }

    /// Everything the server sends until it closes.
    func readUntilClosed() -> [UInt8] {
        while fill() {}
        defer { buffer = [] }
        return buffer
    }
}

extension Substring {
    var trimmingSpaces: String {
        String(drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
    }
}

/// A latch an async handler waits on until the test opens it.
final class Gate: Sendable {
    private let state = Lock<(open: Bool, waiters: [CheckedContinuation<Void, Never>], arrived: Int)>((false, [], 0))

    func wait() async {
        await withCheckedContinuation { continuation in
            let resumeNow = state.withLock { state -> Bool in
                state.arrived += 1
                if state.open { return true }
                state.waiters.append(continuation)
                return false
            }
            if resumeNow { continuation.resume() }
        }
    }

    var arrivals: Int { state.withLock { $0.arrived } }

    /// Handlers that have gone through the gate.
    let departures = Atomic<Int>(0)

    func open() {
        let waiters = state.withLock { state in
            state.open = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }
}

/// The routes the server tests use.
func testRouter(gate: Gate = Gate()) -> HTTPRouter {
    var router = HTTPRouter()
    router.get("/hello") { _ in HTTPServerResponse(status: .ok, headerFields: [.contentType: "text/plain"], body: .string("Hello, World!")) }
    router.post("/echo") { request in HTTPServerResponse(status: .ok, body: .bytes(request.body)) }
    router.get("/users/:id") { request in .text("user \(request.parameters["id"] ?? "?")") }
    router.get("/async", .inTask) { request in
        await Task.yield()
        return .text("async on loop: \(request.loop.isCurrent)")
    }
    router.get("/gate", .inTask) { _ in
        await gate.wait()
        gate.departures.add(1, ordering: .relaxed)
        return .text("opened")
    }
    router.get("/stream") { request in
        let total = request.query("bytes").flatMap { Int($0) } ?? 0
        return HTTPServerResponse(status: .ok, body: .stream { writer in
            var left = total
            let chunk = [UInt8](repeating: UInt8(ascii: "x"), count: 16 * 1024)
            while left > 0 {
                let size = min(left, chunk.count)
                try await writer.write(Array(chunk[..<size]))
                StreamCounter.written.add(size, ordering: .relaxed)
                left -= size
            }
        })
    }
    return router
}

/// Bytes the `/stream` route has handed to its writer (the backpressure test reads it).
enum StreamCounter {
    static let written = Atomic<Int>(0)
}

/// A quiet logger for tests.
var quietLogger: Logger {
    var logger = Logger(label: "test.http")
    logger.logLevel = .critical
    return logger
}

/// Waits, polling every 2 ms for at most 20 s, until `condition` holds; returns whether it did. A wait for
/// an event (a count reaching zero, a handler arriving), never for an order or a duration.
@discardableResult
func eventually(_ condition: () async throws -> Bool) async throws -> Bool {
    for _ in 0..<10_000 {
        if try await condition() { return true }
        try await Task.sleep(for: .milliseconds(2))
    }
    return try await condition()
}

/// Waits until a connect to 127.0.0.1:`port` is refused: the server has closed its listener. Bounded by
/// ``eventually(_:)``'s 20 s; when another test's listener takes the freed port meanwhile (tests run in
/// parallel, some with thousands of connections), the wait ends there without telling. So a test that
/// relies on it gives its server a ``HTTPServer/Configuration/shutdownDeadline`` beyond that bound
/// (``probeSafeShutdownDeadline``), lest the probe's worst case turn a graceful shutdown into a forced one.
func waitUntilStoppedAccepting(port: Int) async throws {
    try await eventually { (try? RawClient(port: port)) == nil }
}

/// A shutdown deadline that ``waitUntilStoppedAccepting(port:)``'s worst case cannot reach.
let probeSafeShutdownDeadline = Duration.seconds(120)

/// Runs `body` with a started one-loop server, then shuts it down and the group with it.
func withServer(
    router: HTTPRouter = testRouter(),
    configure: (inout HTTPServer.Configuration) -> Void = { _ in },
    _ body: (HTTPServer, Int) async throws -> Void
) async throws {
    let group = try LoopGroup(threads: 1, name: "http-test")
    var configuration = HTTPServer.Configuration()
    configure(&configuration)
    let server = HTTPServer(group: group, configuration: configuration, router: router, logger: quietLogger)
    let port = try server.start()
    do {
        try await body(server, port)
    } catch {
        await server.shutdown()
        group.shutdown()
        throw error
    }
    await server.shutdown()
    group.shutdown()
}

/// Descriptors of this process that are TCP sockets bound to `port` on our side: the server's listener
/// and the connections it accepted (tests run in parallel, so the process-wide count would not do).
func serverSocketCount(port: Int) -> Int {
    OpenDescriptors.tcpSockets { local, _ in local == port }
}

/// A value several tasks or threads record into.
final class Recorder<Value: Sendable>: Sendable {
    private let values = Lock<[Value]>([])  // LoopKit's lock: the thread sanitizer sees it (not Mutex)
    init() {}
    func record(_ value: Value) { values.withLock { $0.append(value) } }
    var all: [Value] { values.withLock { $0 } }
    func removeAll() { values.withLock { $0.removeAll() } }
}
