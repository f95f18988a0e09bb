import Foundation

// Plain-socket clients for the network scenarios, the same code against every server: blocking connects
// to 127.0.0.1, then non-blocking sockets driven by `poll` on the calling thread.

enum LoopbackClient {
    /// Opens a TCP connection to 127.0.0.1:`port` (blocking connect), `TCP_NODELAY`, then non-blocking.
    /// Stops the benchmark with a message if it cannot.
    static func connect(port: Int) -> Int32 {
        switch tryConnect(port: port) {
        case .success(let fd): return fd
        case .failure(let problem): check(false, problem.message)
        }
        fatalError("unreachable: check(false, _) exits")
    }

    /// Why ``tryConnect(port:)`` could not connect.
    struct ConnectFailure: Error {
        var message: String
    }

    /// Opens a TCP connection to 127.0.0.1:`port` (blocking connect), `TCP_NODELAY`, then non-blocking;
    /// or says why it could not.
    static func tryConnect(port: Int) -> Result<Int32, ConnectFailure> {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return .failure(ConnectFailure(message: "socket() failed: errno \(errno)")) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port)).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard result == 0 else {
            let code = errno
            close(fd)
            return .failure(ConnectFailure(message: "connect() to port \(port) failed: errno \(code) (\(String(cString: strerror(code))))"))
        }
        var one: Int32 = 1
        _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        return .success(fd)
    }

    /// What ``echo(port:connections:roundTrips:size:)`` measured.
    struct EchoResult {
        /// From the first send to the last byte echoed back.
        var nanoseconds: UInt64
        /// Each round trip's time, from its first byte sent to its last byte received.
        var roundTrips: [UInt64]
    }

    /// Sends `size` bytes on each of `connections` connections, waits for all of them back, records the
    /// round trip and starts the next, until `roundTrips` round trips in all have completed.
    static func echo(port: Int, connections: Int, roundTrips total: Int, size: Int) -> EchoResult {
        let fds = (0..<connections).map { _ in connect(port: port) }
        defer { for fd in fds { close(fd) } }
        let message = [UInt8](repeating: 0x5A, count: size)
        var inbound = [UInt8](repeating: 0, count: 64 * 1024)
        var sent = [Int](repeating: 0, count: connections)
        var received = [Int](repeating: 0, count: connections)
        var startedAt = [UInt64](repeating: 0, count: connections)
        var inFlight = [Bool](repeating: false, count: connections)
        var times: [UInt64] = []
        times.reserveCapacity(total)
        var started = 0
        var completed = 0

        func send(_ index: Int) {
            while sent[index] < size {
                let n = message.withUnsafeBytes {
                    Glibc.send(fds[index], $0.baseAddress! + sent[index], size - sent[index], Int32(MSG_NOSIGNAL))
                }
                if n > 0 {
                    sent[index] += n
                } else {
                    check(errno == EAGAIN || errno == EWOULDBLOCK, "send() failed: errno \(errno)")
                    return
                }
            }
        }
        func begin(_ index: Int) {
            startedAt[index] = monotonicNanoseconds()
            sent[index] = 0
            received[index] = 0
            inFlight[index] = true
            started += 1
            send(index)
        }

        let start = monotonicNanoseconds()
        for index in 0..<connections where started < total { begin(index) }
        var polled = [pollfd](repeating: pollfd(), count: connections)
        while completed < total {
            for index in 0..<connections {
                polled[index].fd = inFlight[index] ? fds[index] : -1
                polled[index].events = Int16(POLLIN) | (sent[index] < size ? Int16(POLLOUT) : 0)
                polled[index].revents = 0
            }
            let ready = poll(&polled, nfds_t(connections), 5_000)
            check(ready > 0, "echo client: poll() returned \(ready) (errno \(errno)) with \(total - completed) round trips left")
            for index in 0..<connections where polled[index].revents != 0 {
                if polled[index].revents & Int16(POLLOUT) != 0 { send(index) }
                guard polled[index].revents & Int16(POLLIN | POLLERR | POLLHUP) != 0 else { continue }
                let n = inbound.withUnsafeMutableBytes { recv(fds[index], $0.baseAddress!, $0.count, 0) }
                if n < 0, errno == EAGAIN || errno == EWOULDBLOCK { continue }
                check(n > 0, "echo client: the server closed a connection or recv() failed (errno \(errno))")
                received[index] += n
                check(received[index] <= sent[index], "echo client: more bytes back than sent")
                if received[index] == size {
                    times.append(monotonicNanoseconds() - startedAt[index])
                    completed += 1
                    inFlight[index] = false
                    if started < total { begin(index) }
                }
            }
        }
        return EchoResult(nanoseconds: monotonicNanoseconds() - start, roundTrips: times)
    }

    /// The 99th percentile of `values` (nearest rank).
    static func percentile99(_ values: [UInt64]) -> Double {
        precondition(!values.isEmpty)
        let sorted = values.sorted()
        return Double(sorted[min(sorted.count - 1, Int((Double(sorted.count) * 0.99).rounded(.up)) - 1)])
    }
}
