// The WebSocket load generator of `make bench-ws` (Benchmarks/ws-bench.sh). One thread, plain sockets, poll(2).
//
//   WebSocketLoad --port P [--path /ws/echo] [--connections 64] [--size 1024] [--seconds 5] [--warmup 1]
//     opens the connections (an RFC 6455 handshake each: a random Sec-WebSocket-Key, the server's
//     Sec-WebSocket-Accept checked, no extension offered), then each keeps one message in flight: a masked
//     text frame of SIZE bytes of ASCII, and once its echo has come back whole, the next. After WARMUP
//     seconds it counts for SECONDS seconds: every echo must be one unmasked FIN text frame whose payload is
//     the message sent (length and bytes), anything else is counted as an error. Prints one line:
//       messages N seconds S rate R p50_us A p99_us B p999_us C max_us D errors E client_cpu_pct F
//     with the round-trip latency (send to whole echo read) from a 1 µs histogram, and this process's CPU
//     time over the counted seconds as a share of one core (to show it is not the bottleneck).
//
//   WebSocketLoad --port P --idle N [--path /ws/echo] [--size 1024]
//     opens N connections one after another, each upgraded and answered one echo, prints `ready N` (or
//     `failed REASON`), keeps them open and idle until its standard input closes, then closes them.
import CPeerOpenSSL
#if canImport(Glibc)
import Glibc
#endif

// MARK: Arguments

let arguments = Array(CommandLine.arguments.dropFirst())
func option(_ name: String) -> String? {
    arguments.firstIndex(of: name).flatMap { $0 + 1 < arguments.count ? arguments[$0 + 1] : nil }
}
let port = option("--port").flatMap { UInt16($0) } ?? 8080
let path = option("--path") ?? "/ws/echo"
let connectionCount = option("--connections").flatMap { Int($0) } ?? 64
let size = option("--size").flatMap { Int($0) } ?? 1024
let seconds = option("--seconds").flatMap { Double($0) } ?? 5
let warmup = option("--warmup").flatMap { Double($0) } ?? 1
let idleCount = option("--idle").flatMap { Int($0) }

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

func cpuNanoseconds() -> UInt64 {
    var usage = rusage()
    getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
    func ns(_ t: timeval) -> UInt64 { UInt64(t.tv_sec) * 1_000_000_000 + UInt64(t.tv_usec) * 1000 }
    return ns(usage.ru_utime) + ns(usage.ru_stime)
}

// MARK: Handshake

/// Base64 of `bytes` (OpenSSL's EVP_EncodeBlock).
func base64(_ bytes: [UInt8]) -> String {
    var out = [UInt8](repeating: 0, count: (bytes.count + 2) / 3 * 4 + 1)
    let written = EVP_EncodeBlock(&out, bytes, Int32(bytes.count))
    return String(decoding: out[0..<Int(written)], as: UTF8.self)
}

/// The Sec-WebSocket-Accept a server must answer to `key`: base64(SHA-1(key + the RFC 6455 GUID)).
func expectedAccept(for key: String) -> String {
    let input = Array((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").utf8)
    var digest = [UInt8](repeating: 0, count: 20)
    var length: UInt32 = 0
    guard EVP_Digest(input, input.count, &digest, &length, EVP_sha1(), nil) == 1 else { fail("SHA-1 unavailable") }
    return base64(digest)
}

func randomBytes(_ count: Int) -> [UInt8] {
    (0..<count).map { _ in UInt8.random(in: 0...255) }
}

/// Writes all of `bytes` to the blocking socket `fd`.
func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Bool {
    var offset = 0
    while offset < bytes.count {
        let n = write(fd, bytes.baseAddress! + offset, bytes.count - offset)
        if n < 0 && errno == EINTR { continue }
        if n <= 0 { return false }
        offset += n
    }
    return true
}

/// Connects to 127.0.0.1:port and upgrades `path` to a WebSocket; returns the blocking socket.
func openWebSocket() -> Int32 {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { fail("socket: errno \(errno)") }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = port.bigEndian
    address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard connected == 0 else { fail("connect: errno \(errno)") }
    var one: Int32 = 1
    setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))

    let key = base64(randomBytes(16))
    let request = "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        + "Sec-WebSocket-Key: \(key)\r\nSec-WebSocket-Version: 13\r\n\r\n"
    guard Array(request.utf8).withUnsafeBytes({ writeAll(fd, $0) }) else { fail("handshake write: errno \(errno)") }
    // The server sends nothing after its 101 until it is sent a message: read up to the blank line.
    var head: [UInt8] = []
    var byte: UInt8 = 0
    while !(head.count >= 4 && head[head.count - 4..<head.count].elementsEqual([13, 10, 13, 10])) {
        let n = read(fd, &byte, 1)
        if n < 0 && errno == EINTR { continue }
        guard n == 1 else { fail("handshake: connection closed after \(head.count) bytes") }
        head.append(byte)
        if head.count > 8192 { fail("handshake: response head too long") }
    }
    let lines = String(decoding: head, as: UTF8.self).split(separator: "\r\n")
    guard let status = lines.first, status.hasPrefix("HTTP/1.1 101") else { fail("handshake: \(lines.first ?? "")") }
    let accept = lines.dropFirst().first { $0.lowercased().hasPrefix("sec-websocket-accept:") }
        .map { $0.dropFirst("sec-websocket-accept:".count).trimmingSpaces() }
    guard accept == expectedAccept(for: key) else { fail("handshake: Sec-WebSocket-Accept \(accept ?? "missing")") }
    return fd
}

extension Substring {
    func trimmingSpaces() -> String {
        String(drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
    }
}

// MARK: Frames

/// The payload every connection sends: SIZE bytes of printable ASCII.
let payload: [UInt8] = (0..<size).map { UInt8(ascii: "a") + UInt8($0 % 26) }

/// A masked FIN text frame carrying `payload` under a random mask key (one key per connection: the frame is
/// built once and sent again and again, which a server cannot tell from fresh keys).
func maskedFrame() -> [UInt8] {
    var frame: [UInt8] = [0x81]
    if size < 126 {
        frame.append(0x80 | UInt8(size))
    } else if size <= 0xFFFF {
        frame += [0x80 | 126, UInt8(size >> 8), UInt8(size & 0xFF)]
    } else {
        frame.append(0x80 | 127)
        for shift in stride(from: 56, through: 0, by: -8) { frame.append(UInt8((size >> shift) & 0xFF)) }
    }
    let mask = randomBytes(4)
    frame += mask
    for (index, byte) in payload.enumerated() { frame.append(byte ^ mask[index % 4]) }
    return frame
}

/// The unmasked FIN text frame header a server's echo must start with.
let echoHeader: [UInt8] = {
    if size < 126 { return [0x81, UInt8(size)] }
    if size <= 0xFFFF { return [0x81, 126, UInt8(size >> 8), UInt8(size & 0xFF)] }
    var header: [UInt8] = [0x81, 127]
    for shift in stride(from: 56, through: 0, by: -8) { header.append(UInt8((size >> shift) & 0xFF)) }
    return header
}()
let echoLength = echoHeader.count + size

/// Whether `buffer` holds exactly the expected echo (header and payload).
func isExpectedEcho(_ buffer: UnsafeRawBufferPointer) -> Bool {
    guard buffer.count == echoLength else { return false }
    let headerOK = echoHeader.withUnsafeBytes { memcmp(buffer.baseAddress!, $0.baseAddress!, echoHeader.count) == 0 }
    let payloadOK = payload.withUnsafeBytes { memcmp(buffer.baseAddress! + echoHeader.count, $0.baseAddress!, size) == 0 }
    return headerOK && payloadOK
}

// MARK: Idle mode

if let idleCount {
    var limit = rlimit()
    getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit)
    limit.rlim_cur = limit.rlim_max
    setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit)
    var sockets: [Int32] = []
    sockets.reserveCapacity(idleCount)
    let reply = UnsafeMutableRawBufferPointer.allocate(byteCount: echoLength, alignment: 8)
    for index in 0..<idleCount {
        let fd = openWebSocket()
        let frame = maskedFrame()
        guard frame.withUnsafeBytes({ writeAll(fd, $0) }) else { fail("connection \(index + 1): write errno \(errno)") }
        var got = 0
        while got < echoLength {
            let n = read(fd, reply.baseAddress! + got, echoLength - got)
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { fail("connection \(index + 1): closed after \(got) bytes of its echo") }
            got += n
        }
        guard isExpectedEcho(UnsafeRawBufferPointer(reply)) else { fail("connection \(index + 1): wrong echo") }
        sockets.append(fd)
    }
    print("ready \(sockets.count)")
    fflush(nil)
    var sink = [UInt8](repeating: 0, count: 256)
    while read(0, &sink, sink.count) > 0 {}
    for fd in sockets { close(fd) }
    exit(0)
}

// MARK: Load mode

/// One connection: its frame, its receive buffer, when its message in flight was sent.
struct Connection {
    var fd: Int32
    var frame: [UInt8]
    var received = 0
    var sentAt: UInt64 = 0
}

func runLoad() {


    var connections: [Connection] = (0..<connectionCount).map { _ in Connection(fd: openWebSocket(), frame: maskedFrame()) }
    let bufferCapacity = max(echoLength * 2, 65536)
    let buffers = (0..<connectionCount).map { _ in UnsafeMutableRawBufferPointer.allocate(byteCount: bufferCapacity, alignment: 8) }
    var pollSet = connections.map { pollfd(fd: $0.fd, events: Int16(POLLIN), revents: 0) }

    // Latency histogram, 1 µs buckets up to 1 s.
    let bucketCount = 1_000_001
    var histogram = [UInt64](repeating: 0, count: bucketCount)
    var counted: UInt64 = 0
    var errors = 0

    func send(_ index: Int) {
        connections[index].sentAt = now()
        let ok = connections[index].frame.withUnsafeBytes { writeAll(connections[index].fd, $0) }
        if !ok { fail("write: errno \(errno)") }
    }

    let start = now()
    let countFrom = start + UInt64(warmup * 1e9)
    let stopAt = countFrom + UInt64(seconds * 1e9)
    var cpuAtCountStart: UInt64 = 0
    var cpuStarted = false
    for index in connections.indices { send(index) }
    var done = false
    while !done {
        let ready = poll(&pollSet, nfds_t(pollSet.count), 1000)
        if ready < 0 && errno == EINTR { continue }
        guard ready > 0 else { fail("no echo for 1 s") }
        let time = now()
        if !cpuStarted && time >= countFrom {
            cpuAtCountStart = cpuNanoseconds()
            cpuStarted = true
        }
        if time >= stopAt { done = true }
        for index in pollSet.indices where pollSet[index].revents != 0 {
            let buffer = buffers[index]
            let got = connections[index].received
            let n = read(connections[index].fd, buffer.baseAddress! + got, bufferCapacity - got)
            if n < 0 && (errno == EINTR || errno == EAGAIN) { continue }
            guard n > 0 else { fail("connection \(index + 1) closed by the server") }
            connections[index].received += n
            guard connections[index].received >= echoLength else { continue }
            let arrived = now()
            if connections[index].received != echoLength || !isExpectedEcho(UnsafeRawBufferPointer(rebasing: buffer[0..<echoLength])) {
                errors += 1
            }
            connections[index].received = 0
            if arrived >= countFrom && arrived < stopAt {
                let micros = Int((arrived - connections[index].sentAt) / 1000)
                histogram[min(micros, bucketCount - 1)] += 1
                counted += 1
            }
            if !done { send(index) }
        }
    }
    let cpu = cpuNanoseconds() - cpuAtCountStart
    for connection in connections { close(connection.fd) }

    func percentile(_ p: Double) -> Int {
        let target = UInt64((Double(counted) * p).rounded(.up))
        var sum: UInt64 = 0
        for (micros, count) in histogram.enumerated() where count > 0 {
            sum += count
            if sum >= target { return micros }
        }
        return 0
    }
    let maxMicros = histogram.lastIndex { $0 > 0 } ?? 0
    print("messages \(counted) seconds \(seconds) rate \(Int(Double(counted) / seconds)) p50_us \(percentile(0.5)) "
        + "p99_us \(percentile(0.99)) p999_us \(percentile(0.999)) max_us \(maxMicros) errors \(errors) "
        + "client_cpu_pct \(Int(Double(cpu) / (seconds * 1e9) * 100))")
}

runLoad()
