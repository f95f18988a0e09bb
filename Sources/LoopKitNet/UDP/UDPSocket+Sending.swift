import LoopKit

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A destination in C form (a `sockaddr_in` or `sockaddr_in6`, in the space of the larger); length 0
/// for the socket's default peer.
struct DatagramAddress {
    var storage = sockaddr_in6()
    var length: socklen_t = 0

    /// The default peer.
    static let defaultPeer = DatagramAddress()

    init() {}

    init(_ address: SocketAddress) {
        do {
            try address.withSockAddr { pointer, length throws(NetError) in
                withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: UnsafeRawBufferPointer(start: pointer, count: Int(length))) }
                self.length = length
            }
        } catch {
            length = 0  // withSockAddr throws only what its body throws, and this body does not
        }
    }

    init(raw: UnsafeRawPointer, length: socklen_t) {
        let count = min(Int(length), MemoryLayout<sockaddr_in6>.size)
        withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: UnsafeRawBufferPointer(start: raw, count: count)) }
        self.length = socklen_t(count)
    }
}

/// A datagram waiting for the kernel.
struct OutboundDatagram {
    var payload: Bytes
    var address: DatagramAddress
}

/// The `sendmmsg` vector and the addresses and buffers its entries point to, set up once. Loop-confined.
final class DatagramSendBuffers {
    static let capacity = 64
    let vector = Socket.MessageVector(capacity: DatagramSendBuffers.capacity)
    private let names = UnsafeMutablePointer<sockaddr_in6>.allocate(capacity: DatagramSendBuffers.capacity)
    private let vectors = UnsafeMutablePointer<iovec>.allocate(capacity: DatagramSendBuffers.capacity)

    init() {
        names.initialize(repeating: sockaddr_in6(), count: Self.capacity)
        vectors.initialize(repeating: iovec(), count: Self.capacity)
        for index in 0..<Self.capacity {
            vector.header(index).pointee.msg_iov = vectors + index
            vector.header(index).pointee.msg_iovlen = 1
        }
    }

    deinit {
        names.deallocate()
        vectors.deallocate()
    }

    /// Points entry `index` at `count` bytes from `base`, for `address`.
    @inline(__always)
    func fill(_ index: Int, base: UnsafeRawPointer?, count: Int, address: DatagramAddress) {
        vectors[index] = iovec(iov_base: UnsafeMutableRawPointer(mutating: base), iov_len: count)
        let header = vector.header(index)
        if address.length == 0 {
            header.pointee.msg_name = nil
            header.pointee.msg_namelen = 0
        } else {
            names[index] = address.storage
            header.pointee.msg_name = UnsafeMutableRawPointer(names + index)
            header.pointee.msg_namelen = address.length
        }
    }
}

extension UDPSocket {
    /// The largest UDP payload (IPv4's: 65,535 less the IP and UDP headers).
    static let largestPayload = 65_507

    /// Datagrams queued for the kernel. Call on the loop's thread.
    public var queuedDatagramCount: Int {
        checkThread()
        return outbound.count - outboundHead
    }

    /// Whether a write now stays at or below ``UDPOptions/sendHighWaterMark`` queued datagrams and the
    /// socket is open. Call on the loop's thread.
    public var isWritable: Bool {
        checkThread()
        return closeReason == nil && !aboveHighWater
    }

    /// Sends `payload` as one datagram to `address` (nil: the default peer), holding its storage by
    /// reference (no copy) while it waits.
    ///
    /// Outside ``onDatagrams(_:)``'s handler the datagram goes to the kernel at once when nothing is
    /// queued (and errors are thrown here); inside it, it is sent with the handler's other datagrams when
    /// it returns (and a later failure goes to ``onError(_:)``). When the kernel takes no more (`EAGAIN`)
    /// it waits in the send queue. Never suspends: check ``isWritable``, or use ``send(_:to:)``.
    ///
    /// - Throws: ``UDPError/closed``, ``UDPError/loopShutDown``, ``UDPError/notConnected`` (no address and
    ///   no default peer), ``UDPError/addressFamilyMismatch(_:)``, ``UDPError/datagramTooLarge(size:)``,
    ///   ``UDPError/sendQueueFull(limit:)``, and what the kernel refused at once
    ///   (``UDPError/permissionDenied(_:)``, ``UDPError/unreachable(_:)``, ``UDPError/connectionRefused``).
    ///
    /// Call on the loop's thread. The corresponding system call is `sendmmsg`.
    public func write(_ payload: Bytes, to address: SocketAddress? = nil) throws(UDPError) {
        checkThread()
        let destination = try destination(address, size: payload.count)
        try send(base: payload.baseAddress.map(UnsafeRawPointer.init), count: payload.count, to: destination,
                 reportingAs: address) { payload }
    }

    /// Sends a copy of `payload` as one datagram to `address` (nil: the default peer); the bytes are copied
    /// only when the datagram must wait. As ``write(_:to:)``.
    ///
    /// Call on the loop's thread. The corresponding system call is `sendmmsg`.
    public func write(copying payload: UnsafeRawBufferPointer, to address: SocketAddress? = nil) throws(UDPError) {
        checkThread()
        let destination = try destination(address, size: payload.count)
        try send(base: payload.baseAddress, count: payload.count, to: destination, reportingAs: address) { Bytes(copying: payload) }
    }

    /// Sends a copy of `payload` to the sender of `datagram` (a lent datagram of ``onDatagrams(_:)``),
    /// without formatting its address: the echo and request-reply path. As ``write(_:to:)``.
    ///
    /// Call on the loop's thread, inside the handler that was lent `datagram`. The corresponding system call
    /// is `sendmmsg`.
    public func write(copying payload: UnsafeRawBufferPointer, toSenderOf datagram: UDPReceivedDatagram) throws(UDPError) {
        checkThread()
        try checkOpen()
        guard payload.count <= Self.largestPayload else { throw .datagramTooLarge(size: payload.count) }
        let destination = DatagramAddress(raw: datagram.senderName, length: datagram.senderLength)
        try send(base: payload.baseAddress, count: payload.count, to: destination, reportingAs: nil) { Bytes(copying: payload) }
    }

    /// Checks a send and converts its destination.
    @inline(__always)
    private func destination(_ address: SocketAddress?, size: Int) throws(UDPError) -> DatagramAddress {
        try checkOpen()
        guard size <= Self.largestPayload else { throw .datagramTooLarge(size: size) }
        guard let address else {
            guard peer != nil else { throw .notConnected }
            return .defaultPeer
        }
        try checkFamily(address)
        return DatagramAddress(address)
    }

    /// Sends now when nothing waits and no handler runs, or queues (`keep` makes the owned bytes).
    @inline(__always)
    private func send(base: UnsafeRawPointer?, count: Int, to destination: DatagramAddress, reportingAs address: SocketAddress?,
                      keep: () -> Bytes) throws(UDPError) {
        if !inDispatch && outboundHead == outbound.count {
            sendBuffers.fill(0, base: base, count: count, address: destination)
            switch Socket.sendMessages(fd, sendBuffers.vector, count: 1) {
            case .moved:
                sentCount &+= 1
                return
            case .wouldBlock:
                break  // queue it
            case .failed(let code):
                throw UDPError(sendErrno: code, size: count, address: address ?? peer)
            }
        }
        guard outbound.count - outboundHead < options.sendQueueLimit else { throw .sendQueueFull(limit: options.sendQueueLimit) }
        outbound.append(OutboundDatagram(payload: keep(), address: destination))
        if outbound.count - outboundHead > options.sendHighWaterMark { aboveHighWater = true }
        if !inDispatch && !isWriteWatchActive { flush() }
    }

    /// Sends queued datagrams until the queue is empty or the kernel takes no more (then the writable watch
    /// waits for room). A datagram the kernel refuses is dropped and reported to ``onError(_:)``.
    func flush() {
        while outboundHead < outbound.count, closeReason == nil {
            let count = min(DatagramSendBuffers.capacity, outbound.count - outboundHead)
            for index in 0..<count {
                let datagram = outbound[outboundHead + index]
                sendBuffers.fill(index, base: datagram.payload.baseAddress.map(UnsafeRawPointer.init), count: datagram.payload.count,
                                 address: datagram.address)
            }
            switch Socket.sendMessages(fd, sendBuffers.vector, count: count) {
            case .moved(let sent):
                outboundHead += sent
                sentCount &+= UInt64(sent)
            case .wouldBlock:
                outbound.removeFirst(outboundHead)
                outboundHead = 0
                setWriteInterest(true)
                queueDrained()
                return
            case .failed(let code):
                let failed = outbound[outboundHead]
                outboundHead += 1
                report(UDPError(sendErrno: code, size: failed.payload.count, address: nil))
            }
        }
        guard closeReason == nil else { return }
        outbound.removeAll(keepingCapacity: outbound.capacity <= 4096)
        outboundHead = 0
        setWriteInterest(false)
        queueDrained()
    }

    /// Starts or stops the writable watch.
    private func setWriteInterest(_ wanted: Bool) {
        guard wanted != isWriteWatchActive, closeReason == nil else { return }
        do {
            if wanted {
                if let writeWatch {
                    try writeWatch.resume()
                } else {
                    writeWatch = try loop.watch(fd, for: .writable) { [unowned self] _ in self.flush() }
                }
            } else {
                writeWatch?.pause()
            }
            isWriteWatchActive = wanted
        } catch {
            report(.system("event_add", 0))
        }
    }

    /// The queue is at or below the low-water mark: tell the writable handler and the suspended senders.
    private func queueDrained() {
        guard aboveHighWater, outbound.count - outboundHead <= options.sendLowWaterMark else { return }
        aboveHighWater = false
        writableHandler?()
        let writers = writeWaiters
        writeWaiters = []
        for writer in writers { writer.resume(returning: .success(())) }
    }

    /// Sends `payload` as one datagram to `address` (nil: the default peer), then suspends while more than
    /// ``UDPOptions/sendHighWaterMark`` datagrams are queued, until the queue drains to
    /// ``UDPOptions/sendLowWaterMark``: backpressure for async code.
    ///
    /// - Throws: As ``write(_:to:)``, except ``UDPError/sendQueueFull(limit:)`` (it waits instead, as long
    ///   as the limit is above the high-water mark); ``UDPError/closed`` or ``UDPError/loopShutDown`` if the
    ///   socket closes while it waits.
    ///
    /// Call on the loop's thread: from a `Task` whose executor preference is ``loop``. The corresponding
    /// system call is `sendmmsg`.
    public func send(_ payload: Bytes, to address: SocketAddress? = nil) async throws(UDPError) {
        checkThread()
        while aboveHighWater && closeReason == nil { try await waitForRoom() }
        try write(payload, to: address)
        if aboveHighWater { try await waitForRoom() }
    }

    private func waitForRoom() async throws(UDPError) {
        let result = await withUnsafeContinuation { (continuation: UnsafeContinuation<Result<Void, UDPError>, Never>) in
            if let closeReason {
                continuation.resume(returning: .failure(closeReason))
            } else if !aboveHighWater {
                continuation.resume(returning: .success(()))
            } else {
                writeWaiters.append(continuation)
            }
        }
        try result.get()
    }
}
