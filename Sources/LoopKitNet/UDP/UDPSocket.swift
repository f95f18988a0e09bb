import LoopKit

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A UDP socket (IPv4 or IPv6) that lives on one `EventLoop`: datagrams received in batches with
/// `recvmmsg`, sent in batches with `sendmmsg`.
///
/// ```swift
/// let socket = try UDPSocket.bind(host: "127.0.0.1", port: 0, on: loop)
/// socket.onDatagrams { batch in                  // lent, no copy: valid during the call
///     for datagram in batch {
///         do { try socket.write(copying: datagram.payload, toSenderOf: datagram) }
///         catch { logger.debug("echo dropped: \(error)"); break }   // closed, or the send queue is full
///     }
/// }                                               // the answers go out with one sendmmsg on return
/// ```
///
/// Two ways to receive, both on the loop's thread:
/// - **A handler** (``onDatagrams(_:)``): lent each batch one `recvmmsg` took, at most
///   ``UDPOptions/receiveBatchSize`` datagrams, straight from the receive buffers. Datagrams written inside
///   it are sent together, with one `sendmmsg`, when it returns.
/// - **Async** (``datagrams``): an `AsyncSequence` of owned ``UDPDatagram``s (one copy each), whose
///   consumer's demand drives reading: past ``UDPOptions/inboundLimit`` untaken datagrams, the socket is no
///   longer read.
///
/// **Sending, with backpressure**: ``write(_:to:)`` sends at once when nothing is queued; when the kernel
/// says `EAGAIN`, datagrams wait in a bounded queue (``UDPOptions/sendQueueLimit``) that a writable watch
/// drains. Above ``UDPOptions/sendHighWaterMark`` queued datagrams ``isWritable`` is false and
/// `try await send(_:to:)` suspends until the queue drains to ``UDPOptions/sendLowWaterMark``, when
/// ``onWritable(_:)`` is called too.
///
/// **Ending**: ``close()``, or the loop's shutdown, closes the socket once: queued datagrams are dropped,
/// the async consumer's sequence ends (nil after ``close()``; ``UDPError/loopShutDown`` on shutdown) and
/// suspended senders get the error. The loop keeps an open socket alive: dropping the reference does not
/// close it.
///
/// **Thread rule**: confined to its loop. Call every method and property on the loop's thread (checked
/// with a precondition: the process stops otherwise), except ``loop``, ``options`` and ``localAddress``,
/// which are safe from any thread. The corresponding libuv type is `uv_udp_t`.
public final class UDPSocket: @unchecked Sendable {  // loop-confined: every entry point checks the thread
    /// The loop the socket lives on. Safe from any thread.
    public let loop: EventLoop
    /// How the socket was bound and how much it batches. Safe from any thread.
    public let options: UDPOptions
    /// The address the socket is bound to (the port the kernel picked for port 0). Safe from any thread.
    public let localAddress: SocketAddress

    var fd: Int32
    let receiveBuffers: DatagramReceiveBuffers
    var readWatch: Watch?
    var isReadWatchActive = false
    var readingPausedByUser = false
    var writeWatch: Watch?
    var isWriteWatchActive = false
    /// Why the socket closed (``UDPError/closed`` or ``UDPError/loopShutDown``); nil while open.
    var closeReason: UDPError?
    var peer: SocketAddress?

    var datagramHandler: ((UDPDatagramBatch) -> Void)?
    var writableHandler: (() -> Void)?
    var errorHandler: ((UDPError) -> Void)?
    /// True while ``onDatagrams(_:)``'s handler runs: writes are queued and sent together when it returns.
    var inDispatch = false

    // Sending.
    var outbound: [OutboundDatagram] = []
    var outboundHead = 0
    let sendBuffers: DatagramSendBuffers
    var aboveHighWater = false
    var writeWaiters: [UnsafeContinuation<Result<Void, UDPError>, Never>] = []
    var sentCount: UInt64 = 0
    var receivedCount: UInt64 = 0

    // The async consumer.
    var inbound: [UDPDatagram] = []
    var inboundHead = 0
    var asyncConsumerStarted = false
    var readWaiter = SingleConsumerWaiter<UDPDatagram, UDPError>()

    /// The socket's own reference, held while it is open.
    var keepAlive: Unmanaged<UDPSocket>?

    /// Binds a UDP socket to a numeric address on `loop`.
    ///
    /// - Parameters:
    ///   - host: A numeric IPv4 or IPv6 address (`127.0.0.1`, `0.0.0.0`, `::1`, `::`).
    ///   - port: 0 lets the kernel pick a free port (see ``localAddress``).
    ///   - loop: The loop the socket lives on.
    ///   - options: Binding, batching and buffering.
    /// - Returns: The socket, open; it receives once a handler is set or ``datagrams`` is iterated.
    /// - Throws: ``NetError/invalidAddress(_:)``, ``NetError/addressInUse(_:)``,
    ///   ``NetError/permissionDenied(_:)``, ``NetError/loopShutDown``, ``NetError/system(_:_:)``.
    ///
    /// Call on the loop's thread. The corresponding system calls are `socket` and `bind`.
    public static func bind(host: String, port: Int, on loop: EventLoop, options: UDPOptions = UDPOptions()) throws(NetError) -> UDPSocket {
        try bind(to: SocketAddress(ipAddress: host, port: port), on: loop, options: options)
    }

    /// Binds a UDP socket to `address` on `loop`; as ``bind(host:port:on:options:)``.
    ///
    /// Call on the loop's thread. The corresponding system calls are `socket` and `bind`.
    public static func bind(to address: SocketAddress, on loop: EventLoop, options: UDPOptions = UDPOptions()) throws(NetError) -> UDPSocket {
        precondition(loop.isCurrent, "UDPSocket.bind called off its loop's thread")
        if let problem = options.problem { throw .invalidAddress("UDP options: \(problem)") }
        let fd = try Socket.bindDatagram(at: address, reuseAddress: options.reuseAddress, reusePort: options.reusePort,
                                         ipv6Only: options.ipv6Only)
        do throws(NetError) {
            if let size = options.receiveBufferSize { try Socket.setOption(fd, SOL_SOCKET, SO_RCVBUF, Int32(clamping: size)) }
            if let size = options.sendBufferSize { try Socket.setOption(fd, SOL_SOCKET, SO_SNDBUF, Int32(clamping: size)) }
            if options.receivesTrafficClass {
                if address.family == .ipv6 {
                    try Socket.setOption(fd, Int32(IPPROTO_IPV6), IPV6_RECVTCLASS, 1)
                    if !options.ipv6Only { try Socket.setOption(fd, Int32(IPPROTO_IP), IP_RECVTOS, 1) }
                } else {
                    try Socket.setOption(fd, Int32(IPPROTO_IP), IP_RECVTOS, 1)
                }
            }
        } catch {
            Socket.close(fd)
            throw error
        }
        let local = Socket.localAddress(of: fd) ?? address
        let socket = UDPSocket(loop: loop, fd: fd, localAddress: local, options: options)
        try socket.start()
        return socket
    }

    /// Adopts a connected datagram socket of any family, for tests: one end of a Unix-domain
    /// `socketpair(SOCK_DGRAM)`, whose peer's queue fills (a real `EAGAIN`, which UDP over loopback never
    /// gives: the kernel delivers at once and drops at the receiver). Loop thread only.
    static func adopting(connectedDatagramSocket fd: Int32, peer: SocketAddress, on loop: EventLoop,
                         options: UDPOptions = UDPOptions()) throws(NetError) -> UDPSocket {
        precondition(loop.isCurrent, "UDPSocket.adopting called off its loop's thread")
        let socket = UDPSocket(loop: loop, fd: fd, localAddress: peer, options: options)
        socket.peer = peer
        try socket.start()
        return socket
    }

    private init(loop: EventLoop, fd: Int32, localAddress: SocketAddress, options: UDPOptions) {
        self.loop = loop
        self.fd = fd
        self.localAddress = localAddress
        self.options = options
        receiveBuffers = DatagramReceiveBuffers(count: options.receiveBatchSize, size: options.maximumDatagramSize,
                                                receivesTrafficClass: options.receivesTrafficClass)
        sendBuffers = DatagramSendBuffers()
    }

    /// Registers the shutdown observer and the (paused) read watch. Loop thread only.
    private func start() throws(NetError) {
        guard loop.addShutdownObserver(ObjectIdentifier(self), { [weak self] in self?.finish(.loopShutDown) }) else {
            Socket.close(fd)
            fd = -1
            throw .loopShutDown
        }
        do {
            let watch = try loop.watch(fd, for: .readable) { [unowned self] _ in self.socketIsReadable() }
            watch.pause()
            readWatch = watch
        } catch {
            loop.removeShutdownObserver(ObjectIdentifier(self))
            Socket.close(fd)
            fd = -1
            if case .shutDown = error { throw .loopShutDown }
            throw .system("event_add", 0)
        }
        keepAlive = Unmanaged.passRetained(self)
    }

    @inline(__always)
    func checkThread(_ function: StaticString = #function) {
        precondition(loop.isCurrent, "UDPSocket.\(function) called off its loop's thread")
    }

    /// Throws when the socket is closed.
    @inline(__always)
    func checkOpen() throws(UDPError) {
        if let closeReason { throw closeReason }
    }

    /// The default peer set by ``connect(to:)``, or nil. Call on the loop's thread.
    public var remoteAddress: SocketAddress? {
        checkThread()
        return peer
    }

    /// Whether the socket is closed. Call on the loop's thread.
    public var isClosed: Bool {
        checkThread()
        return closeReason != nil
    }

    /// Datagrams received so far. Call on the loop's thread.
    public var datagramsReceived: UInt64 {
        checkThread()
        return receivedCount
    }

    /// Datagrams the kernel has taken so far. Call on the loop's thread.
    public var datagramsSent: UInt64 {
        checkThread()
        return sentCount
    }

    // MARK: Default peer

    /// Makes `address` the socket's default peer: ``write(_:to:)`` without an address sends there, and
    /// only datagrams from it are received. Calling it again changes the peer.
    ///
    /// - Throws: ``UDPError/addressFamilyMismatch(_:)``, ``UDPError/closed``, ``UDPError/system(_:_:)``.
    ///
    /// Call on the loop's thread. The corresponding system call is `connect` (immediate for UDP).
    public func connect(to address: SocketAddress) throws(UDPError) {
        checkThread()
        try checkOpen()
        try checkFamily(address)
        let code = Socket.connectDatagram(fd, to: address)
        switch code {
        case 0: peer = address
        case ENETUNREACH, EHOSTUNREACH: throw .unreachable(address)
        case EACCES: throw .permissionDenied("connecting to \(address) needs setBroadcast(true)")
        default: throw .system("connect", code)
        }
    }

    /// Removes the default peer: the socket receives from anyone again.
    ///
    /// - Throws: ``UDPError/closed``, ``UDPError/system(_:_:)``.
    ///
    /// Call on the loop's thread. The corresponding system call is `connect` with `AF_UNSPEC`.
    public func disconnect() throws(UDPError) {
        checkThread()
        try checkOpen()
        guard peer != nil else { return }
        let code = Socket.connectDatagram(fd, to: nil)
        guard code == 0 || code == EAFNOSUPPORT else { throw .system("connect", code) }
        peer = nil
    }

    func checkFamily(_ address: SocketAddress) throws(UDPError) {
        if address.family == localAddress.family { return }
        throw .addressFamilyMismatch(address)
    }

    // MARK: Handlers

    /// Sets the handler for received datagrams: the lean, zero-copy path.
    ///
    /// Each `recvmmsg` that took datagrams lends them to `handler` as one ``UDPDatagramBatch`` (at most
    /// ``UDPOptions/receiveBatchSize``; a readable socket is read up to four batches per readiness, then
    /// the loop serves others). Datagrams the handler writes are sent together, with one `sendmmsg`, when
    /// it returns. Setting a handler starts receiving; it replaces an earlier one. A socket with a handler
    /// must not also be read through ``datagrams``.
    ///
    /// - Parameter handler: Called on the loop's thread, in phase 2 of an iteration (rule R14).
    ///
    /// Call on the loop's thread. The corresponding system call is `recvmmsg`.
    public func onDatagrams(_ handler: @escaping (UDPDatagramBatch) -> Void) {
        checkThread()
        guard closeReason == nil else { return }
        precondition(!asyncConsumerStarted, "UDPSocket.onDatagrams: the socket is already read through `datagrams`")
        datagramHandler = handler
        updateReadInterest()
    }

    /// Sets the handler called when the send queue, having gone above ``UDPOptions/sendHighWaterMark``,
    /// has drained to ``UDPOptions/sendLowWaterMark``: the time to write more.
    ///
    /// Call on the loop's thread.
    public func onWritable(_ handler: @escaping () -> Void) {
        checkThread()
        guard closeReason == nil else { return }
        writableHandler = handler
    }

    /// Sets the handler told of failures that no call can report: a queued datagram the kernel refused
    /// later (it is dropped), a receive error (an ICMP port-unreachable for a socket with a default peer:
    /// ``UDPError/connectionRefused``). The socket stays open.
    ///
    /// Call on the loop's thread.
    public func onError(_ handler: @escaping (UDPError) -> Void) {
        checkThread()
        guard closeReason == nil else { return }
        errorHandler = handler
    }

    /// Stops reading the socket until ``resumeReceiving()`` (the kernel buffers, then drops, what arrives).
    ///
    /// Call on the loop's thread.
    public func pauseReceiving() {
        checkThread()
        readingPausedByUser = true
        updateReadInterest()
    }

    /// Reads the socket again after ``pauseReceiving()``.
    ///
    /// Call on the loop's thread.
    public func resumeReceiving() {
        checkThread()
        readingPausedByUser = false
        updateReadInterest()
    }

    // MARK: Ending

    /// Closes the socket: queued datagrams are dropped, the ``datagrams`` sequence ends, suspended senders
    /// get ``UDPError/closed``, and the handlers are released. Closing again does nothing.
    ///
    /// Call on the loop's thread. The corresponding system call is `close`.
    public func close() {
        checkThread()
        finish(.closed)
    }

    /// The one way the socket closes. Loop thread only.
    func finish(_ reason: UDPError) {
        guard closeReason == nil else { return }
        closeReason = reason
        if reason != .loopShutDown { loop.removeShutdownObserver(ObjectIdentifier(self)) }
        readWatch?.cancel()
        readWatch = nil
        writeWatch?.cancel()
        writeWatch = nil
        isReadWatchActive = false
        isWriteWatchActive = false
        Socket.close(fd)
        fd = -1
        outbound.removeAll()
        outboundHead = 0
        readWaiter.unpark()?.resume(with: reason == .closed ? .success(nil) : .failure(reason))
        let writers = writeWaiters
        writeWaiters = []
        for writer in writers { writer.resume(returning: .failure(reason)) }
        if !inDispatch { datagramHandler = nil }  // a running handler is released when it returns
        writableHandler = nil
        errorHandler = nil
        let retained = keepAlive
        keepAlive = nil
        retained?.release()
    }

    // MARK: Reading

    /// Whether the socket should be read now.
    var wantsToRead: Bool {
        guard closeReason == nil, !readingPausedByUser else { return false }
        if datagramHandler != nil { return true }
        return asyncConsumerStarted && inbound.count - inboundHead < options.inboundLimit
    }

    /// Starts or stops the read watch to match ``wantsToRead``.
    func updateReadInterest() {
        guard let readWatch else { return }
        let wanted = wantsToRead
        guard wanted != isReadWatchActive else { return }
        if wanted {
            do {
                try readWatch.resume()
            } catch {
                report(.system("event_add", 0))
                return
            }
        } else {
            readWatch.pause()
        }
        isReadWatchActive = wanted
    }

    /// Most `recvmmsg` calls per readiness, so one busy socket does not hold the loop.
    static let roundsPerReadiness = 4

    /// The read watch fired: receives up to four batches and hands them over.
    func socketIsReadable() {
        var rounds = 0
        while rounds < Self.roundsPerReadiness, wantsToRead {
            rounds += 1
            var wanted = receiveBuffers.count
            if datagramHandler == nil { wanted = min(wanted, options.inboundLimit - (inbound.count - inboundHead)) }
            receiveBuffers.prepare(wanted)
            switch Socket.receiveMessages(fd, receiveBuffers.vector, count: wanted) {
            case .moved(let count):
                receivedCount &+= UInt64(count)
                deliver(count)
                if count < wanted { return }
            case .wouldBlock:
                return
            case .failed(let code):
                report(code == ECONNREFUSED ? .connectionRefused : .system("recvmmsg", code))
                return
            }
        }
    }

    /// Lends `count` received datagrams to the handler, or copies them for the async consumer.
    @inline(__always)
    private func deliver(_ count: Int) {
        if let handler = datagramHandler {
            inDispatch = true
            handler(UDPDatagramBatch(buffers: receiveBuffers, count: count))
            inDispatch = false
            if closeReason != nil {
                datagramHandler = nil
                return
            }
            if outboundHead < outbound.count, !isWriteWatchActive { flush() }
            return
        }
        var first = 0
        if let consumer = readWaiter.unpark() {
            first = 1
            consumer.resume(returning: receiveBuffers.datagram(0).copied())
        }
        for index in first..<count { inbound.append(receiveBuffers.datagram(index).copied()) }
        updateReadInterest()
    }

    /// Tells the error handler, if any.
    func report(_ error: UDPError) {
        errorHandler?(error)
    }
}
