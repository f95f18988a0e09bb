import CEvent
import LoopKit

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

// The one Swift layer between LoopKitNet and libevent (and the socket system calls). Every libevent call
// LoopKitNet makes is in this file: evconnlistener for accepting, bufferevent and evbuffer for
// connections, evdns for name resolution, evtimer for the idle and connect timeouts. Nothing else in the
// target imports CEvent.

// MARK: - Sockets

/// Socket system calls, with `errno` turned into ``NetError``.
enum NetSocket {
    /// Ignores SIGPIPE process-wide, once, before LoopKitNet creates its first socket.
    ///
    /// libevent writes with `writev`, which has no `MSG_NOSIGNAL`; a peer that goes away mid-write would
    /// otherwise kill the process. With SIGPIPE ignored the write fails with `EPIPE`, which ends the
    /// connection with ``CloseReason/brokenPipe``.
    static let ignoreSIGPIPE: Void = { _ = signal(SIGPIPE, SIG_IGN) }()

    /// Creates a non-blocking, close-on-exec socket bound to `address` and listening.
    static func listen(at address: SocketAddress, reusePort: Bool, backlog: Int32) throws(NetError) -> Int32 {
        NetSocket.ignoreSIGPIPE
        let domain: Int32 = switch address.family {
        case .ipv4: AF_INET
        case .ipv6: AF_INET6
        case .unix: AF_UNIX
        }
        let fd = socket(domain, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw .system("socket", errno) }
        do throws(NetError) {
            if address.family != .unix {
                try setOption(fd, SOL_SOCKET, SO_REUSEADDR, 1)
                if reusePort { try setOption(fd, SOL_SOCKET, SO_REUSEPORT, 1) }
                if address.family == .ipv6 { try setOption(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, 1) }
            }
            try address.withSockAddr { pointer, length throws(NetError) in
                guard bind(fd, pointer, length) == 0 else {
                    let code = errno
                    switch code {
                    case EADDRINUSE: throw .addressInUse(address)
                    case EACCES, EPERM: throw .permissionDenied("cannot bind \(address)")
                    case EADDRNOTAVAIL, EINVAL, EAFNOSUPPORT: throw .invalidAddress("cannot bind \(address): \(String(cString: strerror(code)))")
                    default: throw .system("bind", code)
                    }
                }
            }
            guard Glibc.listen(fd, backlog) == 0 else {
                let code = errno
                if code == EADDRINUSE { throw .addressInUse(address) }
                throw .system("listen", code)
            }
        } catch {
            Glibc.close(fd)
            throw error
        }
        return fd
    }

    /// Sets an integer socket option.
    static func setOption(_ fd: Int32, _ level: Int32, _ name: Int32, _ value: Int32) throws(NetError) {
        var value = value
        guard setsockopt(fd, level, name, &value, socklen_t(MemoryLayout<Int32>.size)) == 0 else {
            throw .system("setsockopt", errno)
        }
    }

    /// The address a socket is bound to. The corresponding system call is `getsockname`.
    static func localAddress(of fd: Int32) -> SocketAddress? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        return withUnsafeMutablePointer(to: &storage) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                getsockname(fd, address, &length) == 0 ? SocketAddress(address) : nil
            }
        }
    }

    /// The address of a socket's peer. The corresponding system call is `getpeername`.
    static func remoteAddress(of fd: Int32) -> SocketAddress? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        return withUnsafeMutablePointer(to: &storage) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                getpeername(fd, address, &length) == 0 ? SocketAddress(address) : nil
            }
        }
    }

    /// Applies the per-connection socket options (TCP only; ignored on Unix-domain sockets).
    static func configure(_ fd: Int32, noDelay: Bool, keepAlive: Bool) {
        var value: Int32 = 1
        let size = socklen_t(MemoryLayout<Int32>.size)
        if noDelay { _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &value, size) }
        if keepAlive { _ = setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &value, size) }
    }

    /// Shuts down the sending side: the peer reads end of file, this side keeps reading.
    static func shutdownWrite(_ fd: Int32) {
        _ = Glibc.shutdown(fd, Int32(SHUT_WR))
    }

    /// Makes the coming `close` send a reset instead of a FIN (`SO_LINGER` with zero time).
    static func resetOnClose(_ fd: Int32) {
        var linger = linger(l_onoff: 1, l_linger: 0)
        _ = setsockopt(fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<linger>.size))
    }

    /// Removes a Unix-domain socket's file.
    static func unlink(path: String) {
        _ = Glibc.unlink(path)
    }

    /// The calling thread's `errno`.
    static var lastError: Int32 { errno }
}

// MARK: - Listener

/// An `evconnlistener` accepting on a listening socket it owns (closed when freed).
final class LibEventListener {
    let raw: OpaquePointer

    /// Wraps `fd`, already listening with its own backlog. The corresponding libevent call is
    /// `evconnlistener_new`, with backlog 0: "already listening" (a negative one would make libevent call
    /// `listen(fd, 128)` again, shrinking the accept queue the caller asked for).
    init(base: OpaquePointer, fd: Int32, context: UnsafeMutableRawPointer) throws(NetError) {
        let flags = UInt32(LEV_OPT_CLOSE_ON_FREE) | UInt32(LEV_OPT_CLOSE_ON_EXEC)
        guard let listener = evconnlistener_new(base, { _, fd, address, _, context in
            let endpoint = Unmanaged<ListenerEndpoint>.fromOpaque(context!).takeUnretainedValue()
            endpoint.accepted(fd: fd, address: address.map { SocketAddress(UnsafePointer($0)) } ?? nil)
        }, context, flags, 0, fd) else {
            throw .libevent("evconnlistener_new")
        }
        raw = listener
        evconnlistener_set_error_cb(raw) { _, context in
            let endpoint = Unmanaged<ListenerEndpoint>.fromOpaque(context!).takeUnretainedValue()
            endpoint.acceptFailed(errno: errno)
        }
    }

    /// Starts accepting again. The corresponding libevent call is `evconnlistener_enable`.
    func enable() { _ = evconnlistener_enable(raw) }
    /// Stops accepting (the socket stays bound). The corresponding libevent call is `evconnlistener_disable`.
    func disable() { _ = evconnlistener_disable(raw) }
    /// Frees the listener and closes its socket. The corresponding libevent call is `evconnlistener_free`.
    func free() { evconnlistener_free(raw) }
}

// MARK: - Buffered connection

/// What a bufferevent's event callback reports (`BEV_EVENT_*`).
struct BufferEventEvents: OptionSet {
    let rawValue: Int16
    static let reading = BufferEventEvents(rawValue: Int16(BEV_EVENT_READING))
    static let writing = BufferEventEvents(rawValue: Int16(BEV_EVENT_WRITING))
    static let endOfFile = BufferEventEvents(rawValue: Int16(BEV_EVENT_EOF))
    static let error = BufferEventEvents(rawValue: Int16(BEV_EVENT_ERROR))
    static let timeout = BufferEventEvents(rawValue: Int16(BEV_EVENT_TIMEOUT))
    static let connected = BufferEventEvents(rawValue: Int16(BEV_EVENT_CONNECTED))
}

/// A `bufferevent` (socket or in-memory pair) and its two `evbuffer`s. Loop thread only.
struct LibEventBuffers {
    let raw: OpaquePointer
    let input: OpaquePointer
    let output: OpaquePointer

    init(_ raw: OpaquePointer) {
        self.raw = raw
        input = bufferevent_get_input(raw)
        output = bufferevent_get_output(raw)
    }

    /// A bufferevent over a connected socket (or -1 for one that will connect); it closes the socket
    /// when freed. The corresponding libevent call is `bufferevent_socket_new`.
    static func socket(base: OpaquePointer, fd: Int32) throws(NetError) -> LibEventBuffers {
        NetSocket.ignoreSIGPIPE
        guard let raw = bufferevent_socket_new(base, fd, Int32(BEV_OPT_CLOSE_ON_FREE.rawValue)) else {
            if fd >= 0 { Glibc.close(fd) }
            throw .libevent("bufferevent_socket_new")
        }
        return LibEventBuffers(raw)
    }

    /// Two bufferevents joined in memory: what one writes, the other reads. Callbacks are deferred to the
    /// base's next pass so a write never re-enters the partner's callback. The corresponding libevent call
    /// is `bufferevent_pair_new`.
    static func pair(base: OpaquePointer) throws(NetError) -> (LibEventBuffers, LibEventBuffers) {
        var ends: [OpaquePointer?] = [nil, nil]
        guard bufferevent_pair_new(base, Int32(BEV_OPT_DEFER_CALLBACKS.rawValue), &ends) == 0,
              let first = ends[0], let second = ends[1] else {
            throw .libevent("bufferevent_pair_new")
        }
        return (LibEventBuffers(first), LibEventBuffers(second))
    }

    /// Routes the callbacks to `connection` (unretained: the connection keeps itself alive while open).
    /// The corresponding libevent call is `bufferevent_setcb`.
    func route(to context: UnsafeMutableRawPointer) {
        bufferevent_setcb(raw, { _, context in
            Unmanaged<TCPConnection>.fromOpaque(context!).takeUnretainedValue().bufferDidRead()
        }, { _, context in
            Unmanaged<TCPConnection>.fromOpaque(context!).takeUnretainedValue().bufferDidDrain()
        }, { _, what, context in
            let error = errno
            Unmanaged<TCPConnection>.fromOpaque(context!).takeUnretainedValue()
                .bufferDidReport(BufferEventEvents(rawValue: what), errno: error)
        }, context)
    }

    /// Stops every callback (before freeing, or once a connection ends).
    func unroute() { bufferevent_setcb(raw, nil, nil, nil, nil) }

    /// The corresponding libevent call is `bufferevent_enable`.
    func enable(reading: Bool = false, writing: Bool = false) {
        var flags: Int16 = 0
        if reading { flags |= Int16(EV_READ) }
        if writing { flags |= Int16(EV_WRITE) }
        _ = bufferevent_enable(raw, flags)
    }

    /// The corresponding libevent call is `bufferevent_disable`.
    func disable(reading: Bool = false, writing: Bool = false) {
        var flags: Int16 = 0
        if reading { flags |= Int16(EV_READ) }
        if writing { flags |= Int16(EV_WRITE) }
        _ = bufferevent_disable(raw, flags)
    }

    /// Whether writing is enabled. The corresponding libevent call is `bufferevent_get_enabled`.
    var isWriteEnabled: Bool { bufferevent_get_enabled(raw) & Int16(EV_WRITE) != 0 }

    /// Reading stops while the input holds `readHigh` bytes; the write callback runs once the output has
    /// drained to `writeLow`. The corresponding libevent call is `bufferevent_setwatermark`.
    func setWatermarks(readHigh: Int, writeLow: Int) {
        bufferevent_setwatermark(raw, Int16(EV_READ), 0, readHigh)
        bufferevent_setwatermark(raw, Int16(EV_WRITE), writeLow, 0)
    }

    /// The corresponding libevent call is `bufferevent_set_timeouts`.
    func setTimeouts(read: Duration?, write: Duration?) {
        var readValue = read.map(timeval.init(duration:))
        var writeValue = write.map(timeval.init(duration:))
        withOptionalPointer(&readValue) { readPointer in
            withOptionalPointer(&writeValue) { writePointer in
                _ = bufferevent_set_timeouts(raw, readPointer, writePointer)
            }
        }
    }

    /// The socket, or -1 for an in-memory pair. The corresponding libevent call is `bufferevent_getfd`.
    var fd: Int32 { bufferevent_getfd(raw) }

    /// Bytes waiting in the input. The corresponding libevent call is `evbuffer_get_length`.
    var inputCount: Int { evbuffer_get_length(input) }
    /// Bytes waiting in the output. The corresponding libevent call is `evbuffer_get_length`.
    var outputCount: Int { evbuffer_get_length(output) }

    /// Lends the whole input, made contiguous, to `body`, then drains the bytes it reports consumed.
    /// The corresponding libevent calls are `evbuffer_pullup` and `evbuffer_drain`.
    func consumeInput(_ body: (UnsafeRawBufferPointer) -> Int) -> Int {
        let count = evbuffer_get_length(input)
        guard count > 0, let start = evbuffer_pullup(input, -1) else { return body(UnsafeRawBufferPointer(start: nil, count: 0)) }
        let consumed = body(UnsafeRawBufferPointer(start: start, count: count))
        precondition(consumed >= 0 && consumed <= count, "LoopKitNet: a read handler consumed \(consumed) of \(count) bytes")
        if consumed > 0 { evbuffer_drain(input, consumed) }
        return consumed
    }

    /// Moves up to `limit` input bytes into a new ``Bytes`` (the one copy on the read path).
    /// The corresponding libevent call is `evbuffer_remove`.
    func takeInput(limit: Int) -> Bytes {
        let count = min(evbuffer_get_length(input), limit)
        return Bytes(unsafeUninitializedCapacity: count) { buffer in
            Int(evbuffer_remove(input, buffer.baseAddress, count))
        }
    }

    /// Throws away all input. The corresponding libevent call is `evbuffer_drain`.
    func discardInput() { evbuffer_drain(input, evbuffer_get_length(input)) }

    /// Copies `buffer` to the end of the output. The corresponding libevent call is `evbuffer_add`.
    func append(_ buffer: UnsafeRawBufferPointer) throws(NetError) {
        guard buffer.count > 0 else { return }
        guard evbuffer_add(output, buffer.baseAddress, buffer.count) == 0 else { throw .libevent("evbuffer_add") }
    }

    /// Appends `bytes` by reference: libevent holds the storage until it has sent the bytes, then
    /// releases it. The corresponding libevent call is `evbuffer_add_reference`.
    func appendReference(_ bytes: Bytes) throws(NetError) {
        guard let storage = bytes.storage, bytes.count > 0 else { return }
        let retained = Unmanaged.passRetained(storage).toOpaque()
        guard evbuffer_add_reference(output, storage.base + bytes.startIndex, bytes.count, { _, _, storage in
            Unmanaged<Bytes.Storage>.fromOpaque(storage!).release()
        }, retained) == 0 else {
            Unmanaged<Bytes.Storage>.fromOpaque(retained).release()
            throw .libevent("evbuffer_add_reference")
        }
    }

    /// Lets `body` write up to `capacity` bytes straight into the output's free space, committing what it
    /// reports written. The corresponding libevent calls are `evbuffer_reserve_space` and
    /// `evbuffer_commit_space`.
    func appendInPlace(capacity: Int, _ body: (UnsafeMutableRawBufferPointer) -> Int) throws(NetError) {
        guard capacity > 0 else { return }
        var extent = iovec()  // libevent's evbuffer_iovec is the system's iovec
        guard evbuffer_reserve_space(output, capacity, &extent, 1) == 1, let base = extent.iov_base else {
            throw .libevent("evbuffer_reserve_space")
        }
        let written = body(UnsafeMutableRawBufferPointer(start: base, count: capacity))
        precondition(written >= 0 && written <= capacity, "LoopKitNet: wrote \(written) bytes into \(capacity)")
        extent.iov_len = written
        guard evbuffer_commit_space(output, &extent, 1) == 0 else { throw .libevent("evbuffer_commit_space") }
    }

    /// Writes as much of the output as the socket takes now, without waiting for the loop's next poll.
    ///
    /// A socket bufferevent keeps the start of its output frozen (only the bufferevent drains it), so
    /// this thaws it for the write, as libevent's own write callback does; a frozen buffer would refuse
    /// the write with -1 and a stale `errno`.
    /// - Returns: Bytes written, 0 when the socket would block, or the negated `errno` of a failure.
    /// The corresponding libevent calls are `evbuffer_unfreeze`, `evbuffer_write` and `evbuffer_freeze`.
    func writeOutputNow() -> Int {
        _ = evbuffer_unfreeze(output, 1)
        let result = evbuffer_write(output, bufferevent_getfd(raw))
        _ = evbuffer_freeze(output, 1)
        if result >= 0 { return Int(result) }
        let code = errno
        return code == EAGAIN || code == EWOULDBLOCK || code == EINTR ? 0 : -Int(code)
    }

    /// Marks the end of the output of an in-memory pair: the partner reads end of file once it has read
    /// everything. The corresponding libevent call is `bufferevent_flush` with `BEV_FINISHED`.
    func finishPairOutput() {
        _ = bufferevent_flush(raw, Int16(EV_WRITE), BEV_FINISHED)
    }

    /// Starts a connect to a numeric address. The corresponding libevent call is `bufferevent_socket_connect`.
    func connect(to address: SocketAddress) throws(NetError) {
        try address.withSockAddr { pointer, length throws(NetError) in
            guard bufferevent_socket_connect(raw, pointer, Int32(length)) == 0 else {
                throw .system("connect", errno)
            }
        }
    }

    /// Resolves `host` with evdns, then connects to the first address that answers. The corresponding
    /// libevent call is `bufferevent_socket_connect_hostname`.
    func connect(toHost host: String, port: Int, resolver: LibEventResolver) throws(NetError) {
        guard bufferevent_socket_connect_hostname(raw, resolver.raw, AF_UNSPEC, host, Int32(port)) == 0 else {
            throw .nameResolutionFailed(host: host, reason: "cannot start resolving")
        }
    }

    /// The resolver's error for a failed `connect(toHost:…)`, as a message; nil when it was not a
    /// resolution failure. The corresponding libevent call is `bufferevent_socket_get_dns_error`.
    var resolutionError: String? {
        let code = bufferevent_socket_get_dns_error(raw)
        return code == 0 ? nil : String(cString: evutil_gai_strerror(code))
    }

    /// Frees the bufferevent (and closes its socket). The corresponding libevent call is `bufferevent_free`.
    func free() { bufferevent_free(raw) }
}

/// An evdns resolver on a loop's base, reading `/etc/resolv.conf` and `/etc/hosts`.
final class LibEventResolver {
    let raw: OpaquePointer

    /// The corresponding libevent call is `evdns_base_new`.
    init(base: OpaquePointer) throws(NetError) {
        guard let raw = evdns_base_new(base, EVDNS_BASE_INITIALIZE_NAMESERVERS | EVDNS_BASE_DISABLE_WHEN_INACTIVE) else {
            throw .libevent("evdns_base_new")
        }
        self.raw = raw
    }

    /// The corresponding libevent call is `evdns_base_free`.
    func free() { evdns_base_free(raw, 0) }
}

// MARK: - Timers

/// A one-shot libevent timer that calls a Swift closure on the loop. Loop thread only.
final class LibEventTimer {
    private var event: OpaquePointer?
    private let action: () -> Void

    /// The corresponding libevent call is `evtimer_new`.
    init(base: OpaquePointer, _ action: @escaping () -> Void) {
        self.action = action
        event = event_new(base, -1, 0, { _, _, context in
            Unmanaged<LibEventTimer>.fromOpaque(context!).takeUnretainedValue().action()
        }, Unmanaged.passUnretained(self).toOpaque())
    }

    /// (Re-)arms the timer. The corresponding libevent call is `event_add`.
    func arm(after delay: Duration) {
        guard let event else { return }
        var value = timeval(duration: delay)
        _ = event_add(event, &value)
    }

    /// Disarms the timer. The corresponding libevent call is `event_del`.
    func disarm() {
        guard let event else { return }
        _ = event_del(event)
    }

    /// Frees the event. The corresponding libevent call is `event_free`.
    func free() {
        guard let event else { return }
        event_free(event)
        self.event = nil
    }

    deinit { free() }
}

/// The base's cached time of the current iteration, in nanoseconds. The corresponding libevent call is
/// `event_base_gettimeofday_cached`.
func libEventCachedTime(_ base: OpaquePointer) -> UInt64 {
    var now = timeval()
    _ = event_base_gettimeofday_cached(base, &now)
    return UInt64(now.tv_sec) &* 1_000_000_000 &+ UInt64(now.tv_usec) &* 1_000
}

extension timeval {
    init(duration: Duration) {
        let (seconds, attoseconds) = max(duration, .zero).components
        self.init(tv_sec: Int(seconds), tv_usec: Int(attoseconds / 1_000_000_000_000))
    }
}

private func withOptionalPointer<T, R>(_ value: inout T?, _ body: (UnsafePointer<T>?) -> R) -> R {
    if value != nil {
        return withUnsafePointer(to: &value!) { body($0) }
    }
    return body(nil)
}
