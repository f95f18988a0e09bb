#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import LoopKit

/// A non-blocking TCP socket watched by a loop: the raw-fd transport under ``HTTPConnection``.
///
/// Reads go into one growable buffer that the connection parses in place (borrowed bytes, no copy);
/// writes go straight to the socket, and only what the kernel does not take is kept, with a writable watch
/// until it drains. The only file with socket system calls, with ``SocketListener``.
///
/// Loop-confined: created, used and released on its loop's thread.
final class SocketTransport: HTTPTransport {
    let fd: Int32
    let loop: EventLoop
    /// The connection; a strong reference until the socket closes (the cycle ends there).
    var delegate: (any HTTPTransportDelegate)?
    private let lowWaterMark: Int

    private var inbound: UnsafeMutableRawPointer
    private var inboundCapacity: Int
    private var inboundStart = 0
    private var inboundEnd = 0

    private var outbound: [UInt8] = []
    private var outboundOffset = 0

    private var readWatch: Watch?
    private var writeWatch: Watch?
    private var closeWhenFlushed = false
    private(set) var isClosed = false

    static let initialCapacity = 4096

    init(fd: Int32, loop: EventLoop, lowWaterMark: Int) {
        self.fd = fd
        self.loop = loop
        self.lowWaterMark = lowWaterMark
        inboundCapacity = Self.initialCapacity
        inbound = UnsafeMutableRawPointer.allocate(byteCount: inboundCapacity, alignment: 16)
    }

    deinit {
        inbound.deallocate()
        if !isClosed { Glibc.close(fd) }
    }

    /// Starts reading. Call once, after setting the delegate.
    ///
    /// The first read is tried at once: a client usually sends its request right behind the handshake,
    /// so it is often waiting already when the connection is accepted, and answering it now saves a
    /// poll (on `Connection: close` traffic, one per request). When nothing is there yet the read
    /// returns `EAGAIN` and the watch takes over.
    func start() throws(EventLoopError) {
        try startReading()
        readable()
    }

    private func startReading() throws(EventLoopError) {
        guard readWatch == nil, !isClosed else { return }
        readWatch = try loop.watch(fd, for: .readable) { [unowned self] _ in self.readable() }
    }

    private func readable() {
        // Room for at least 4 KiB more: compact, then grow.
        if inboundCapacity - inboundEnd < 4096 {
            if inboundStart > 0 {
                let pending = inboundEnd - inboundStart
                if pending > 0 { (inbound + 0).copyMemory(from: inbound + inboundStart, byteCount: pending) }
                inboundStart = 0
                inboundEnd = pending
            }
            if inboundCapacity - inboundEnd < 4096 {
                let capacity = inboundCapacity * 2
                let grown = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 16)
                grown.copyMemory(from: inbound, byteCount: inboundEnd)
                inbound.deallocate()
                inbound = grown
                inboundCapacity = capacity
            }
        }
        let count = Glibc.read(fd, inbound + inboundEnd, inboundCapacity - inboundEnd)
        if count > 0 {
            inboundEnd += count
            if let delegate { consumeBufferedInput { delegate.transportReceived($0) } }
        } else if count == 0 {
            close(flushing: true)
        } else if errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR {
            close(flushing: false)
        }
    }

    func consumeBufferedInput(_ body: (UnsafeRawBufferPointer) -> Int) {
        let consumed = body(UnsafeRawBufferPointer(start: inbound + inboundStart, count: inboundEnd - inboundStart))
        inboundStart += consumed
        if inboundStart == inboundEnd {
            inboundStart = 0
            inboundEnd = 0
            if inboundCapacity > 64 * 1024 {  // a large body passed through: give the memory back
                inbound.deallocate()
                inboundCapacity = Self.initialCapacity
                inbound = UnsafeMutableRawPointer.allocate(byteCount: inboundCapacity, alignment: 16)
            }
        }
    }

    func write(_ bytes: UnsafeRawBufferPointer) {
        guard !isClosed, !bytes.isEmpty else { return }
        var offset = 0
        if outbound.count == outboundOffset {
            let sent = send(fd, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL))
            if sent == bytes.count { return }
            if sent < 0 {
                guard errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR else {
                    close(flushing: false)
                    return
                }
            } else {
                offset = sent
            }
        }
        outbound.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[offset...]))
        if writeWatch == nil {
            do {
                writeWatch = try loop.watch(fd, for: .writable) { [unowned self] _ in self.writable() }
            } catch {
                close(flushing: false)  // the output can never drain: end the connection, its delegate is told
            }
        }
    }

    private func writable() {
        while outboundOffset < outbound.count {
            let sent = outbound.withUnsafeBytes { raw in
                send(fd, raw.baseAddress! + outboundOffset, raw.count - outboundOffset, Int32(MSG_NOSIGNAL))
            }
            if sent < 0 {
                if errno == EAGAIN || errno == EWOULDBLOCK { break }
                if errno == EINTR { continue }
                close(flushing: false)
                return
            }
            outboundOffset += sent
        }
        if outboundOffset == outbound.count {
            outbound.removeAll(keepingCapacity: outbound.capacity <= 64 * 1024)
            outboundOffset = 0
            writeWatch?.cancel()
            writeWatch = nil
            if closeWhenFlushed {
                closeNow()
                return
            }
        } else if outboundOffset > 1 << 20 {
            outbound.removeFirst(outboundOffset)
            outboundOffset = 0
        }
        if pendingOutputCount <= lowWaterMark { delegate?.transportDrained() }
    }

    var pendingOutputCount: Int { outbound.count - outboundOffset }

    func pauseReading() {
        readWatch?.cancel()
        readWatch = nil
    }

    func resumeReading() {
        do {
            try startReading()
        } catch {
            close(flushing: false)  // the input can never be read: end the connection, its delegate is told
        }
    }

    func close(flushing: Bool) {
        guard !isClosed else { return }
        if flushing && pendingOutputCount > 0 {
            closeWhenFlushed = true
            pauseReading()
            return
        }
        closeNow()
    }

    private func closeNow() {
        guard !isClosed else { return }
        isClosed = true
        readWatch?.cancel()
        readWatch = nil
        writeWatch?.cancel()
        writeWatch = nil
        Glibc.close(fd)
        let delegate = self.delegate
        self.delegate = nil
        delegate?.transportClosed()
    }
}

/// glibc's `accept4` (accept, non-blocking and close-on-exec in one call), which Swift's Glibc module does
/// not declare (it needs `_GNU_SOURCE`). A plain C function of four word-sized arguments.
@_silgen_name("accept4")
private func systemAccept4(_ fd: Int32, _ address: UnsafeMutablePointer<sockaddr>?,
                           _ length: UnsafeMutablePointer<socklen_t>?, _ flags: Int32) -> Int32

/// A listening TCP socket on one loop; several loops share a port through `SO_REUSEPORT`.
///
/// Loop-confined once started.
final class SocketListener {
    let fd: Int32
    let port: Int
    private var watch: Watch?

    /// Binds and listens.
    ///
    /// - Parameters:
    ///   - host: An IPv4 address.
    ///   - port: The port, 0 for one the kernel picks.
    ///   - backlog: The accept queue length.
    /// - Throws: ``HTTPServerError/cannotListen(_:)``.
    init(host: String, port: Int, backlog: Int32) throws(HTTPServerError) {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else {
            throw .cannotListen("\(host) is not an IPv4 address")
        }
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw .cannotListen("socket: \(String(cString: strerror(errno)))") }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, socklen_t(MemoryLayout<Int32>.size))
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, backlog) == 0 else {
            let reason = String(cString: strerror(errno))
            Glibc.close(fd)
            throw .cannotListen("\(host):\(port): \(reason)")
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        self.fd = fd
        self.port = Int(UInt16(bigEndian: address.sin_port))
    }

    /// Accepts connections on `loop`, handing each new non-blocking fd (TCP_NODELAY set) to `accept`.
    ///
    /// Call on the loop's thread.
    func start(on loop: EventLoop, accept: @escaping (Int32) -> Void) throws(EventLoopError) {
        let fd = fd
        watch = try loop.watch(fd, for: .readable) { _ in
            for _ in 0..<64 {
                let client = systemAccept4(fd, nil, nil, Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue))
                guard client >= 0 else { return }
                var one: Int32 = 1
                setsockopt(client, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
                accept(client)
            }
        }
    }

    private var isClosed = false

    /// Stops accepting and closes the socket. Call on the loop's thread; closing twice does nothing.
    func close() {
        guard !isClosed else { return }
        isClosed = true
        watch?.cancel()
        watch = nil
        Glibc.close(fd)
    }

    deinit {
        if !isClosed { Glibc.close(fd) }
    }
}
