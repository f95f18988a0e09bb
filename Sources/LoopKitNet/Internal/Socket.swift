import LoopKit

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

// The one file of LoopKitNet with socket system calls. Everything above it sees Swift types: results
// as counts or ``NetError``s, never `errno`. The loop's watches (`EventLoop.watch`) are LoopKitNet's
// only use of libevent.

/// glibc's `accept4` (accept, non-blocking and close-on-exec in one call), which Swift's Glibc module does
/// not declare (it needs `_GNU_SOURCE`). A plain C function of four word-sized arguments.
@_silgen_name("accept4")
private func systemAccept4(_ fd: Int32, _ address: UnsafeMutablePointer<sockaddr>?,
                           _ length: UnsafeMutablePointer<socklen_t>?, _ flags: Int32) -> Int32

/// Socket system calls on non-blocking, close-on-exec sockets.
package enum Socket {
    /// Ignores SIGPIPE process-wide, once, before LoopKitNet creates its first socket: a peer that goes
    /// away mid-`writev` (which has no `MSG_NOSIGNAL`) then fails the write with `EPIPE`, ending the
    /// connection with ``CloseReason/brokenPipe``, instead of killing the process.
    static let ignoreSIGPIPE: Void = { _ = signal(SIGPIPE, SIG_IGN) }()

    private static let socketFlags = Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue)

    private static func domain(of family: SocketAddress.Family) -> Int32 {
        switch family {
        case .ipv4: AF_INET
        case .ipv6: AF_INET6
        case .unix: AF_UNIX
        }
    }

    /// A new stream socket of `family`.
    static func open(_ family: SocketAddress.Family) throws(NetError) -> Int32 {
        ignoreSIGPIPE
        let fd = socket(domain(of: family), Int32(SOCK_STREAM.rawValue) | socketFlags, 0)
        guard fd >= 0 else { throw .system("socket", errno) }
        return fd
    }

    /// A socket bound to `address` and listening. `SO_REUSEPORT` only when asked (a group's listeners
    /// share a port; a lone listener on a port in use is an error, not a second server).
    /// `TCP_DEFER_ACCEPT` for `deferAcceptSeconds` > 0 (TCP only).
    static func listen(at address: SocketAddress, reusePort: Bool, backlog: Int32, deferAcceptSeconds: Int32 = 0) throws(NetError) -> Int32 {
        let fd = try open(address.family)
        do throws(NetError) {
            if address.family != .unix {
                try setOption(fd, SOL_SOCKET, SO_REUSEADDR, 1)
                if reusePort { try setOption(fd, SOL_SOCKET, SO_REUSEPORT, 1) }
                if address.family == .ipv6 { try setOption(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, 1) }
                if deferAcceptSeconds > 0 { try setOption(fd, Int32(IPPROTO_TCP), TCP_DEFER_ACCEPT, deferAcceptSeconds) }
            }
            try address.withSockAddr { pointer, length throws(NetError) in
                guard bind(fd, pointer, length) == 0 else {
                    let code = errno
                    switch code {
                    case EADDRINUSE: throw .addressInUse(address)
                    case EACCES, EPERM: throw .permissionDenied("cannot bind \(address)")
                    case EADDRNOTAVAIL, EINVAL, EAFNOSUPPORT:
                        throw .invalidAddress("cannot bind \(address): \(String(cString: strerror(code)))")
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

    /// What one `accept` gave.
    enum Accepted {
        /// A new connection's socket (non-blocking, close-on-exec).
        case connection(Int32)
        /// Nothing is waiting.
        case none
        /// Out of descriptors or memory (`errno`): the listener should back off.
        case exhausted(Int32)
    }

    /// Accepts one connection. The corresponding system call is `accept4`.
    static func accept(_ fd: Int32) -> Accepted {
        while true {
            let client = systemAccept4(fd, nil, nil, socketFlags)
            if client >= 0 { return .connection(client) }
            let code = errno
            switch code {
            case EINTR, ECONNABORTED, EPROTO: continue  // that connection went away: take the next
            case EMFILE, ENFILE, ENOBUFS, ENOMEM: return .exhausted(code)
            default: return .none
            }
        }
    }

    /// What a non-blocking connect started.
    enum ConnectStart {
        /// Connected at once (a Unix-domain socket, usually).
        case connected
        /// Under way: the socket becomes writable when it is done.
        case inProgress
    }

    /// Starts connecting `fd` to `address`. The corresponding system call is `connect`.
    static func connect(_ fd: Int32, to address: SocketAddress) throws(NetError) -> ConnectStart {
        try address.withSockAddr { pointer, length throws(NetError) in
            if Glibc.connect(fd, pointer, length) == 0 { return .connected }
            let code = errno
            if code == EINPROGRESS || code == EAGAIN || code == EINTR { return .inProgress }
            throw connectError(code, address)
        }
    }

    /// The outcome of a connect that was in progress: nil when it succeeded. The corresponding system call
    /// is `getsockopt(SO_ERROR)`.
    static func connectResult(_ fd: Int32, _ address: SocketAddress) -> NetError? {
        var code: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(fd, SOL_SOCKET, SO_ERROR, &code, &length) == 0 else { return .system("getsockopt", errno) }
        // A reset or a broken pipe means the handshake finished and the peer has gone since: the
        // connection was made, and its first read or write reports the end.
        return code == 0 || code == ECONNRESET || code == EPIPE ? nil : connectError(code, address)
    }

    private static func connectError(_ code: Int32, _ address: SocketAddress) -> NetError {
        switch code {
        case ECONNREFUSED, ENOENT: .connectionRefused(address)
        case EACCES, EPERM: .permissionDenied("cannot connect to \(address)")
        case ETIMEDOUT: .connectTimedOut
        default: .system("connect", code)
        }
    }

    /// What a read or a write did.
    package enum Transfer {
        /// This many bytes moved (more than 0).
        case moved(Int)
        /// The socket would block.
        case wouldBlock
        /// End of file (reads only).
        case endOfFile
        /// It failed; the connection ends with this reason.
        case failed(CloseReason)
    }

    /// Reads up to `count` bytes into `buffer`. The corresponding system call is `read`.
    @inline(__always)
    static func read(_ fd: Int32, into buffer: UnsafeMutableRawPointer, count: Int) -> Transfer {
        while true {
            let result = Glibc.read(fd, buffer, count)
            if result > 0 { return .moved(result) }
            if result == 0 { return .endOfFile }
            let code = errno
            switch code {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK: return .wouldBlock
            default: return .failed(CloseReason(errno: code))
            }
        }
    }

    /// Writes the `count` buffers of `vectors` with one system call. The corresponding system call is
    /// `writev`.
    @inline(__always)
    static func write(_ fd: Int32, _ vectors: UnsafePointer<iovec>, count: Int) -> Transfer {
        while true {
            let result = writev(fd, vectors, Int32(count))
            if result > 0 { return .moved(result) }
            if result == 0 { return .wouldBlock }
            let code = errno
            switch code {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK: return .wouldBlock
            default: return .failed(CloseReason(errno: code))
            }
        }
    }

    /// Sets an integer socket option.
    static func setOption(_ fd: Int32, _ level: Int32, _ name: Int32, _ value: Int32) throws(NetError) {
        var value = value
        guard setsockopt(fd, level, name, &value, socklen_t(MemoryLayout<Int32>.size)) == 0 else {
            throw .system("setsockopt", errno)
        }
    }

    /// Applies the per-connection TCP options (not for Unix-domain sockets).
    static func configure(_ fd: Int32, noDelay: Bool, keepAlive: Bool) {
        var value: Int32 = 1
        let size = socklen_t(MemoryLayout<Int32>.size)
        if noDelay { _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &value, size) }
        if keepAlive { _ = setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &value, size) }
    }

    /// The address a socket is bound to. The corresponding system call is `getsockname`.
    static func localAddress(of fd: Int32) -> SocketAddress? {
        address(of: fd) { getsockname($0, $1, $2) }
    }

    /// The address of a socket's peer. The corresponding system call is `getpeername`.
    static func remoteAddress(of fd: Int32) -> SocketAddress? {
        address(of: fd) { getpeername($0, $1, $2) }
    }

    private static func address(
        of fd: Int32, _ call: (Int32, UnsafeMutablePointer<sockaddr>, UnsafeMutablePointer<socklen_t>) -> Int32
    ) -> SocketAddress? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        return withUnsafeMutablePointer(to: &storage) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                call(fd, address, &length) == 0 ? SocketAddress(address) : nil
            }
        }
    }

    /// Shuts down the sending side: the peer reads end of file, this side keeps reading.
    static func shutdownWrite(_ fd: Int32) {
        _ = Glibc.shutdown(fd, Int32(SHUT_WR))
    }

    /// Bytes written to the socket that the peer has not acknowledged yet (`ioctl(SIOCOUTQ)`); 0 for a
    /// descriptor that is not a TCP socket.
    static func unacknowledgedOutput(_ fd: Int32) -> Int {
        var count: Int32 = 0
        let siocoutq: UInt = 0x5411  // SIOCOUTQ, as TIOCOUTQ
        return ioctl(fd, siocoutq, &count) == 0 ? Int(count) : 0
    }

    /// Makes the coming `close` send a reset instead of a FIN (`SO_LINGER` with zero time).
    static func resetOnClose(_ fd: Int32) {
        var linger = linger(l_onoff: 1, l_linger: 0)
        _ = setsockopt(fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<linger>.size))
    }

    /// Closes a descriptor.
    static func close(_ fd: Int32) {
        _ = Glibc.close(fd)
    }

    /// Removes a Unix-domain socket's file.
    static func unlink(path: String) {
        _ = Glibc.unlink(path)
    }

    /// Resolves `host` to addresses for `port` with the system resolver (`/etc/hosts`, DNS), blocking:
    /// call it off the loop's thread. The corresponding C call is `getaddrinfo`.
    static func resolve(host: String, port: Int) -> Result<[SocketAddress], NetError> {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_family = AF_UNSPEC
        var list: UnsafeMutablePointer<addrinfo>?
        let code = getaddrinfo(host, String(port), &hints, &list)
        guard code == 0 else {
            return .failure(.nameResolutionFailed(host: host, reason: String(cString: gai_strerror(code))))
        }
        defer { freeaddrinfo(list) }
        var addresses: [SocketAddress] = []
        var entry = list
        while let current = entry {
            if let address = current.pointee.ai_addr, let parsed = SocketAddress(UnsafePointer(address)),
               !addresses.contains(parsed) {
                addresses.append(parsed)
            }
            entry = current.pointee.ai_next
        }
        if addresses.isEmpty { return .failure(.nameResolutionFailed(host: host, reason: "no address")) }
        return .success(addresses)
    }
}

// MARK: - Datagram sockets (UDP)

/// glibc's `recvmmsg` and `sendmmsg`, which Swift's Glibc module does not declare (they need
/// `_GNU_SOURCE`, as does `struct mmsghdr`: a `msghdr` followed by an `unsigned int`, laid out by
/// ``Socket/MessageVector``).
@_silgen_name("recvmmsg")
private func systemRecvmmsg(_ fd: Int32, _ vector: UnsafeMutableRawPointer, _ count: UInt32, _ flags: Int32,
                            _ timeout: UnsafeMutablePointer<timespec>?) -> Int32
@_silgen_name("sendmmsg")
private func systemSendmmsg(_ fd: Int32, _ vector: UnsafeMutableRawPointer, _ count: UInt32, _ flags: Int32) -> Int32

extension Socket {
    /// A C array of `struct mmsghdr` (a `msghdr` and the byte count the kernel fills in), for
    /// `recvmmsg` and `sendmmsg`. Owns its memory; loop-confined like the socket that uses it.
    final class MessageVector {
        /// `sizeof(struct mmsghdr)`: `msghdr` then `unsigned int msg_len`, padded to the alignment of `msghdr`.
        static let stride = (MemoryLayout<msghdr>.size + MemoryLayout<UInt32>.size + MemoryLayout<msghdr>.alignment - 1)
            / MemoryLayout<msghdr>.alignment * MemoryLayout<msghdr>.alignment
        let capacity: Int
        let base: UnsafeMutableRawPointer

        init(capacity: Int) {
            self.capacity = capacity
            base = UnsafeMutableRawPointer.allocate(byteCount: capacity * Self.stride, alignment: MemoryLayout<msghdr>.alignment)
            base.initializeMemory(as: UInt8.self, repeating: 0, count: capacity * Self.stride)
        }

        deinit { base.deallocate() }

        /// The `msghdr` of entry `index`.
        @inline(__always)
        func header(_ index: Int) -> UnsafeMutablePointer<msghdr> {
            (base + index * Self.stride).assumingMemoryBound(to: msghdr.self)
        }

        /// The byte count the kernel gave entry `index` (`msg_len`).
        @inline(__always)
        func length(_ index: Int) -> Int {
            Int((base + index * Self.stride + MemoryLayout<msghdr>.size).load(as: UInt32.self))
        }
    }

    /// What a batched receive or send did.
    enum Batch {
        /// This many messages moved (more than 0).
        case moved(Int)
        /// The socket would block.
        case wouldBlock
        /// It failed with this `errno`.
        case failed(Int32)
    }

    /// A new datagram socket of `family` bound to `address`. `SO_REUSEADDR`/`SO_REUSEPORT` only when asked;
    /// an IPv6 socket is IPv6-only unless `ipv6Only` is false.
    static func bindDatagram(at address: SocketAddress, reuseAddress: Bool, reusePort: Bool, ipv6Only: Bool) throws(NetError) -> Int32 {
        guard address.family != .unix else { throw .invalidAddress("UDP needs an IPv4 or IPv6 address, not \(address)") }
        ignoreSIGPIPE
        let fd = socket(domain(of: address.family), Int32(SOCK_DGRAM.rawValue) | socketFlags, 0)
        guard fd >= 0 else { throw .system("socket", errno) }
        do throws(NetError) {
            if reuseAddress { try setOption(fd, SOL_SOCKET, SO_REUSEADDR, 1) }
            if reusePort { try setOption(fd, SOL_SOCKET, SO_REUSEPORT, 1) }
            if address.family == .ipv6 { try setOption(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, ipv6Only ? 1 : 0) }
            try address.withSockAddr { pointer, length throws(NetError) in
                guard bind(fd, pointer, length) == 0 else {
                    let code = errno
                    switch code {
                    case EADDRINUSE: throw .addressInUse(address)
                    case EACCES, EPERM: throw .permissionDenied("cannot bind \(address)")
                    case EADDRNOTAVAIL, EINVAL, EAFNOSUPPORT:
                        throw .invalidAddress("cannot bind \(address): \(String(cString: strerror(code)))")
                    default: throw .system("bind", code)
                    }
                }
            }
        } catch {
            Glibc.close(fd)
            throw error
        }
        return fd
    }

    /// Sets the default peer of a datagram socket (it then receives only from that peer); `nil` removes
    /// it (`AF_UNSPEC`). The corresponding system call is `connect`; it never blocks for UDP.
    static func connectDatagram(_ fd: Int32, to address: SocketAddress?) -> Int32 {
        guard let address else {
            var unspecified = sockaddr()
            unspecified.sa_family = sa_family_t(AF_UNSPEC)
            return Glibc.connect(fd, &unspecified, socklen_t(MemoryLayout<sockaddr>.size)) == 0 ? 0 : errno
        }
        do {
            return try address.withSockAddr { pointer, length in Glibc.connect(fd, pointer, length) == 0 ? 0 : errno }
        } catch {
            return EINVAL
        }
    }

    /// Receives up to `count` datagrams into the entries of `vector`. The corresponding system call is
    /// `recvmmsg` (without a timeout, non-blocking).
    @inline(__always)
    static func receiveMessages(_ fd: Int32, _ vector: MessageVector, count: Int) -> Batch {
        while true {
            let result = systemRecvmmsg(fd, vector.base, UInt32(count), 0, nil)
            if result > 0 { return .moved(Int(result)) }
            if result == 0 { return .wouldBlock }
            let code = errno
            switch code {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK: return .wouldBlock
            default: return .failed(code)
            }
        }
    }

    /// Sends the first `count` entries of `vector`, as many as the socket takes now. The corresponding
    /// system call is `sendmmsg`.
    @inline(__always)
    static func sendMessages(_ fd: Int32, _ vector: MessageVector, from start: Int = 0, count: Int) -> Batch {
        while true {
            let result = systemSendmmsg(fd, vector.base + start * MessageVector.stride, UInt32(count), 0)
            if result > 0 { return .moved(Int(result)) }
            if result == 0 { return .wouldBlock }
            let code = errno
            switch code {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK, ENOBUFS: return .wouldBlock
            default: return .failed(code)
            }
        }
    }

    /// Sets a socket option from `length` bytes at `value`; 0 or the `errno`. The corresponding system
    /// call is `setsockopt`.
    static func setRawOption(_ fd: Int32, _ level: Int32, _ name: Int32, _ value: UnsafeRawPointer, _ length: Int) -> Int32 {
        setsockopt(fd, level, name, value, socklen_t(length)) == 0 ? 0 : errno
    }

    /// Reads an integer socket option; nil when the call fails. The corresponding system call is `getsockopt`.
    static func integerOption(_ fd: Int32, _ level: Int32, _ name: Int32) -> Int32? {
        var value: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        return getsockopt(fd, level, name, &value, &length) == 0 ? value : nil
    }
}
