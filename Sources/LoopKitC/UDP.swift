import CLoopKit
import LoopKit
import LoopKitNet

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

// UDP sockets from C: lk_udp_* over LoopKitNet's UDPSocket.

/// The `lk_udp` handle: a socket, and the C view of the batch its receive callback is lent. Loop-confined:
/// every function checks the thread before touching it (lk_udp_local_port reads only immutable state).
final class CUDPSocket {
    let socket: UDPSocket
    /// The C datagrams of the batch being lent, refilled before each callback.
    let datagrams: UnsafeMutablePointer<lk_udp_datagram>
    let capacity: Int
    /// The batch being lent to the C callback, for lk_udp_reply; nil outside it.
    var current: UDPDatagramBatch?

    init(socket: UDPSocket) {
        self.socket = socket
        capacity = socket.options.receiveBatchSize
        datagrams = UnsafeMutablePointer<lk_udp_datagram>.allocate(capacity: capacity)
        datagrams.initialize(repeating: lk_udp_datagram(), count: capacity)
    }

    deinit { datagrams.deallocate() }

    var loop: EventLoop { socket.loop }
}

extension Status {
    /// The status code for a UDP socket's error (the `errno` kept for `lk_last_errno` where one applies).
    static func of(_ error: UDPError) -> Int32 {
        switch error {
        case .closed, .loopShutDown: closed
        case .sendQueueFull: again
        case .datagramTooLarge: failedSystemCall(errno: EMSGSIZE)
        case .notConnected: failedSystemCall(errno: EDESTADDRREQ)
        case .addressFamilyMismatch, .invalidArgument: invalid
        case .connectionRefused: failedSystemCall(errno: ECONNREFUSED)
        case .permissionDenied: failedSystemCall(errno: EACCES)
        case .unreachable: failedSystemCall(errno: ENETUNREACH)
        case .system(_, let code): failedSystemCall(errno: code)
        }
    }

    /// The status code for a bind's or an address's error.
    static func of(_ error: NetError) -> Int32 {
        switch error {
        case .addressInUse: failedSystemCall(errno: EADDRINUSE)
        case .permissionDenied: failedSystemCall(errno: EACCES)
        case .invalidAddress, .nameResolutionFailed, .tls, .lineTooLong: invalid
        case .connectionRefused: failedSystemCall(errno: ECONNREFUSED)
        case .connectTimedOut: failedSystemCall(errno: ETIMEDOUT)
        case .connectionClosed, .loopShutDown: closed
        case .system(_, let code): failedSystemCall(errno: code)
        }
    }

    /// Runs a UDP call and maps its outcome to `LK_OK` or an `LK_E*` code.
    static func runUDP(_ body: () throws(UDPError) -> Void) -> Int32 {
        do {
            try body()
            return ok
        } catch {
            return of(error)
        }
    }
}

/// The socket behind a handle, when called on its loop's thread; else the status to return.
private func udpSocket(_ handle: OpaquePointer?) -> Result<CUDPSocket, UDPCallRefusal> {
    guard let udp = Handles.borrow(handle, as: CUDPSocket.self) else { return .failure(UDPCallRefusal(status: Status.invalid)) }
    guard udp.loop.isCurrent else { return .failure(UDPCallRefusal(status: Status.wrongThread)) }
    return .success(udp)
}

/// Why a call was refused before it reached the socket.
private struct UDPCallRefusal: Error {
    let status: Int32
}

/// A numeric address from C, or nil.
private func address(_ host: UnsafePointer<CChar>?, _ port: Int32) -> SocketAddress? {
    guard let host else { return nil }
    do {
        return try SocketAddress(ipAddress: String(cString: host), port: Int(port))
    } catch {
        return nil
    }
}

@c @implementation
public func lk_udp_bind(
    _ loopHandle: OpaquePointer!, _ host: UnsafePointer<CChar>!, _ port: Int32, _ flags: UInt32,
    _ batchSize: Int, _ maxDatagramSize: Int, _ out: UnsafeMutablePointer<OpaquePointer?>!
) -> Int32 {
    guard let loop = Handles.borrow(loopHandle, as: EventLoop.self), let out else { return Status.invalid }
    guard loop.isCurrent else { return Status.wrongThread }
    guard let bindAddress = address(host, port) else { return Status.invalid }
    // size_t arrives as Int: one with the top bit set is negative here, and is refused like any other value
    // out of range (it used to fall through to the default).
    guard (0...1024).contains(batchSize), (0...65_535).contains(maxDatagramSize) else { return Status.invalid }
    var options = UDPOptions()
    options.reuseAddress = flags & UInt32(LK_UDP_REUSEADDR) != 0
    options.reusePort = flags & UInt32(LK_UDP_REUSEPORT) != 0
    options.receivesTrafficClass = flags & UInt32(LK_UDP_RECVTOS) != 0
    options.ipv6Only = flags & UInt32(LK_UDP_DUALSTACK) == 0
    if batchSize > 0 { options.receiveBatchSize = batchSize }
    if maxDatagramSize > 0 { options.maximumDatagramSize = maxDatagramSize }
    do {
        let socket = try UDPSocket.bind(to: bindAddress, on: loop, options: options)
        Handles.store(Handles.retain(CUDPSocket(socket: socket)), in: out)
        return Status.ok
    } catch {
        return Status.of(error)
    }
}

@c @implementation
public func lk_udp_local_port(_ handle: OpaquePointer!) -> Int32 {
    guard let udp = Handles.borrow(handle, as: CUDPSocket.self) else { return Status.invalid }
    return Int32(udp.socket.localAddress.port)
}

@c @implementation
public func lk_udp_connect(_ handle: OpaquePointer!, _ host: UnsafePointer<CChar>!, _ port: Int32) -> Int32 {
    switch udpSocket(handle) {
    case .failure(let refusal): return refusal.status
    case .success(let udp):
        guard let peer = address(host, port) else { return Status.invalid }
        return Status.runUDP { () throws(UDPError) in try udp.socket.connect(to: peer) }
    }
}

@c @implementation
public func lk_udp_recv_start(
    _ handle: OpaquePointer!,
    _ fn: (@convention(c) (UnsafeMutableRawPointer?, OpaquePointer?, UnsafePointer<lk_udp_datagram>?, Int) -> Void)!,
    _ ctx: UnsafeMutableRawPointer!
) -> Int32 {
    switch udpSocket(handle) {
    case .failure(let refusal): return refusal.status
    case .success(let udp):
        guard let fn else { return Status.invalid }
        guard !udp.socket.isClosed else { return Status.closed }
        let context = Context(ctx)
        let cHandle = Handles.unretained(udp)
        udp.socket.onDatagrams { [unowned udp] batch in
            for index in 0..<batch.count {
                let datagram = batch[index]
                udp.datagrams[index] = lk_udp_datagram(
                    data: UnsafeRawPointer(datagram.payload.baseAddress), length: datagram.payload.count,
                    sender: datagram.senderName.assumingMemoryBound(to: sockaddr.self), sender_length: datagram.senderLength,
                    flags: datagram.isTruncated ? Int32(LK_UDP_TRUNCATED) : 0,
                    traffic_class: datagram.trafficClass.map { Int32($0) } ?? -1)
            }
            udp.current = batch
            fn(context.pointer, cHandle, udp.datagrams, batch.count)
            udp.current = nil
        }
        udp.socket.resumeReceiving()
        return Status.ok
    }
}

@c @implementation
public func lk_udp_recv_stop(_ handle: OpaquePointer!) -> Int32 {
    switch udpSocket(handle) {
    case .failure(let refusal): return refusal.status
    case .success(let udp):
        guard !udp.socket.isClosed else { return Status.closed }
        udp.socket.pauseReceiving()
        return Status.ok
    }
}

@c @implementation
public func lk_udp_send(
    _ handle: OpaquePointer!, _ data: UnsafeRawPointer!, _ length: Int, _ host: UnsafePointer<CChar>!, _ port: Int32
) -> Int32 {
    switch udpSocket(handle) {
    case .failure(let refusal): return refusal.status
    case .success(let udp):
        guard data != nil || length == 0, length >= 0 else { return Status.invalid }
        var destination: SocketAddress?
        if host != nil {
            guard let parsed = address(host, port) else { return Status.invalid }
            destination = parsed
        }
        return Status.runUDP { () throws(UDPError) in
            try udp.socket.write(copying: UnsafeRawBufferPointer(start: data, count: length), to: destination)
        }
    }
}

@c @implementation
public func lk_udp_reply(
    _ handle: OpaquePointer!, _ data: UnsafeRawPointer!, _ length: Int, _ to: UnsafePointer<lk_udp_datagram>!
) -> Int32 {
    switch udpSocket(handle) {
    case .failure(let refusal): return refusal.status
    case .success(let udp):
        guard data != nil || length == 0, length >= 0, let to, let batch = udp.current else { return Status.invalid }
        let index = to - UnsafePointer(udp.datagrams)
        guard index >= 0, index < batch.count else { return Status.invalid }
        return Status.runUDP { () throws(UDPError) in
            try udp.socket.write(copying: UnsafeRawBufferPointer(start: data, count: length), toSenderOf: batch[index])
        }
    }
}

@c @implementation
public func lk_udp_queued(_ handle: OpaquePointer!) -> Int32 {
    switch udpSocket(handle) {
    case .failure(let refusal): return refusal.status
    case .success(let udp): return Int32(clamping: udp.socket.queuedDatagramCount)
    }
}

/// Runs an option setter on the socket behind `handle`.
private func setOption(_ handle: OpaquePointer?, _ body: (UDPSocket) throws(UDPError) -> Void) -> Int32 {
    switch udpSocket(handle) {
    case .failure(let refusal): return refusal.status
    case .success(let udp): return Status.runUDP { () throws(UDPError) in try body(udp.socket) }
    }
}

@c @implementation
public func lk_udp_set_broadcast(_ handle: OpaquePointer!, _ on: Int32) -> Int32 {
    setOption(handle) { socket throws(UDPError) in try socket.setBroadcast(on != 0) }
}

@c @implementation
public func lk_udp_set_ttl(_ handle: OpaquePointer!, _ ttl: Int32) -> Int32 {
    setOption(handle) { socket throws(UDPError) in try socket.setTimeToLive(Int(ttl)) }
}

@c @implementation
public func lk_udp_set_multicast_ttl(_ handle: OpaquePointer!, _ ttl: Int32) -> Int32 {
    setOption(handle) { socket throws(UDPError) in try socket.setMulticastTimeToLive(Int(ttl)) }
}

@c @implementation
public func lk_udp_set_multicast_loop(_ handle: OpaquePointer!, _ on: Int32) -> Int32 {
    setOption(handle) { socket throws(UDPError) in try socket.setMulticastLoopback(on != 0) }
}

@c @implementation
public func lk_udp_set_traffic_class(_ handle: OpaquePointer!, _ trafficClass: Int32) -> Int32 {
    guard (0...255).contains(trafficClass) else { return Status.invalid }
    return setOption(handle) { socket throws(UDPError) in try socket.setTrafficClass(UInt8(trafficClass)) }
}

@c @implementation
public func lk_udp_join_group(_ handle: OpaquePointer!, _ group: UnsafePointer<CChar>!, _ interface: UnsafePointer<CChar>!) -> Int32 {
    guard let group else { return Status.invalid }
    let name = interface.map { String(cString: $0) }
    return setOption(handle) { socket throws(UDPError) in try socket.joinMulticastGroup(String(cString: group), interface: name) }
}

@c @implementation
public func lk_udp_leave_group(_ handle: OpaquePointer!, _ group: UnsafePointer<CChar>!, _ interface: UnsafePointer<CChar>!) -> Int32 {
    guard let group else { return Status.invalid }
    let name = interface.map { String(cString: $0) }
    return setOption(handle) { socket throws(UDPError) in try socket.leaveMulticastGroup(String(cString: group), interface: name) }
}

@c @implementation
public func lk_udp_close(_ handle: OpaquePointer!) -> Int32 {
    switch udpSocket(handle) {
    case .failure(let refusal): return refusal.status
    case .success(let udp):
        guard udp.current == nil else { return Status.busy }
        udp.socket.close()
        Handles.release(handle, as: CUDPSocket.self)
        return Status.ok
    }
}
