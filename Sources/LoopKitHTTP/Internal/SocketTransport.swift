#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import LoopKit

/// A non-blocking TCP socket watched by a loop: the raw-fd transport under ``HTTPConnection``.
///
/// Reads go into the loop's ``SharedReadBuffer`` and the connection parses them in place (borrowed bytes,
/// no copy); bytes it leaves unconsumed move to a buffer of the connection's own, which later reads extend
/// until it is consumed, and which is freed then. Writes go straight to the socket, and only what the
/// kernel does not take is kept, with a writable watch until it drains. The only file with socket system
/// calls, with ``SocketListener``.
///
/// Loop-confined: created, used and released on its loop's thread.
final class SocketTransport: HTTPTransport {
    let fd: Int32
    let loop: EventLoop
    /// The connection; a strong reference until the socket closes (the cycle ends there).
    var delegate: (any HTTPTransportDelegate)?
    private let lowWaterMark: Int

    private let shared: SharedReadBuffer
    /// Bytes received and not consumed yet, when there are any (nil otherwise: an idle connection).
    private var leftover: UnsafeMutableRawPointer?
    private var leftoverCapacity = 0
    private var leftoverStart = 0
    private var leftoverEnd = 0

    private var outbound: [UInt8] = []
    private var outboundOffset = 0

    private var readWatch: Watch?
    private var writeWatch: Watch?
    private var closeWhenFlushed = false
    private(set) var isClosed = false

    /// The least a connection's own buffer grows by.
    static let leftoverGrowth = 4096

    init(fd: Int32, loop: EventLoop, readBuffer: SharedReadBuffer, lowWaterMark: Int) {
        self.fd = fd
        self.loop = loop
        shared = readBuffer
        self.lowWaterMark = lowWaterMark
    }

    deinit {
        leftover?.deallocate()
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
        let count: Int
        if leftoverEnd == leftoverStart {
            // Nothing left over: read into the loop's shared buffer and parse there.
            count = Glibc.read(fd, shared.base, shared.capacity)
            if count > 0 {
                let consumed = delegate?.transportReceived(UnsafeRawBufferPointer(start: shared.base, count: count)) ?? 0
                if consumed < count, !isClosed { keepLeftover(UnsafeRawBufferPointer(start: shared.base + consumed, count: count - consumed)) }
                return
            }
        } else {
            // A request in pieces: extend the connection's own buffer, parse it whole.
            reserveLeftover(Self.leftoverGrowth)
            count = Glibc.read(fd, leftover! + leftoverEnd, leftoverCapacity - leftoverEnd)
            if count > 0 {
                leftoverEnd += count
                if let delegate { consumeBufferedInput { delegate.transportReceived($0) } }
                return
            }
        }
        if count == 0 {
            close(flushing: true)
        } else if errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR {
            close(flushing: false)
        }
    }

    /// Copies unconsumed bytes into the connection's own buffer, behind what it already holds.
    private func keepLeftover(_ bytes: UnsafeRawBufferPointer) {
        reserveLeftover(bytes.count)
        (leftover! + leftoverEnd).copyMemory(from: bytes.baseAddress!, byteCount: bytes.count)
        leftoverEnd += bytes.count
    }

    /// Makes room for `count` more bytes at the end of the connection's own buffer: compacts, then grows.
    private func reserveLeftover(_ count: Int) {
        if leftoverCapacity - leftoverEnd >= count { return }
        let pending = leftoverEnd - leftoverStart
        if leftoverStart > 0, let leftover {
            if pending > 0 { leftover.copyMemory(from: leftover + leftoverStart, byteCount: pending) }
            leftoverStart = 0
            leftoverEnd = pending
            if leftoverCapacity - leftoverEnd >= count { return }
        }
        let capacity = max(leftoverCapacity * 2, pending + max(count, Self.leftoverGrowth))
        let grown = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 16)
        if let leftover {
            grown.copyMemory(from: leftover, byteCount: pending)
            leftover.deallocate()
        }
        leftover = grown
        leftoverCapacity = capacity
    }

    func consumeBufferedInput(_ body: (UnsafeRawBufferPointer) -> Int) {
        guard let leftover else {
            _ = body(UnsafeRawBufferPointer(start: nil, count: 0))
            return
        }
        let consumed = body(UnsafeRawBufferPointer(start: leftover + leftoverStart, count: leftoverEnd - leftoverStart))
        leftoverStart += consumed
        if leftoverStart == leftoverEnd {  // all consumed: an idle connection holds no read buffer
            leftover.deallocate()
            self.leftover = nil
            leftoverCapacity = 0
            leftoverStart = 0
            leftoverEnd = 0
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
