#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Why an operation on a ``UDPSocket`` failed. (Binding fails with a ``NetError``, as a listener's does.)
/// A plain value; safe from any thread.
public enum UDPError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The socket was closed (``UDPSocket/close()``) and refuses the operation.
    case closed
    /// The socket's loop has begun to shut down; the socket closed with it.
    case loopShutDown
    /// The queue of datagrams the kernel has not taken yet holds ``UDPOptions/sendQueueLimit`` datagrams:
    /// this one was not queued. Wait for ``UDPSocket/onWritable(_:)`` (or use the async `send`).
    case sendQueueFull(limit: Int)
    /// The datagram is larger than UDP (or the path, `EMSGSIZE`) allows: its size in bytes.
    case datagramTooLarge(size: Int)
    /// A send without a destination on a socket that has no default peer (``UDPSocket/connect(to:)``).
    case notConnected
    /// The destination's family (IPv4, IPv6) is not the socket's.
    case addressFamilyMismatch(SocketAddress)
    /// An argument that cannot be used: a multicast group that is not one, a value out of range.
    case invalidArgument(String)
    /// The peer's port is closed: an ICMP port-unreachable came back for an earlier datagram
    /// (`ECONNREFUSED`, reported on a socket with a default peer).
    case connectionRefused
    /// Sending needs a permission the socket lacks: a broadcast address without
    /// ``UDPSocket/setBroadcast(_:)`` (`EACCES`), or a firewall rule (`EPERM`).
    case permissionDenied(String)
    /// No route to the destination (`ENETUNREACH`, `EHOSTUNREACH`).
    case unreachable(SocketAddress?)
    /// Another system call failed: its name and `errno`.
    case system(String, Int32)

    /// A short English description with the details.
    public var description: String {
        switch self {
        case .closed: "the UDP socket is closed"
        case .loopShutDown: "the loop is shutting down (the UDP socket closed with it)"
        case .sendQueueFull(let limit): "the UDP send queue is full (\(limit) datagrams wait for the kernel)"
        case .datagramTooLarge(let size): "datagram too large for UDP or the path: \(size) bytes"
        case .notConnected: "no destination: the UDP socket has no default peer (connect it, or name the address)"
        case .addressFamilyMismatch(let address): "address family mismatch: \(address) on a socket of the other family"
        case .invalidArgument(let what): "invalid argument: \(what)"
        case .connectionRefused: "connection refused: the peer's port is closed (ICMP port unreachable)"
        case .permissionDenied(let what): "permission denied: \(what)"
        case .unreachable(let address): "network unreachable" + (address.map { ": \($0)" } ?? "")
        case .system(let call, let code): "\(call) failed: \(String(cString: strerror(code))) (errno \(code))"
        }
    }

    /// The error for a failed send of `size` bytes to `address` (nil: the default peer).
    init(sendErrno code: Int32, size: Int, address: SocketAddress?) {
        switch code {
        case EMSGSIZE: self = .datagramTooLarge(size: size)
        case ECONNREFUSED: self = .connectionRefused
        case EACCES: self = .permissionDenied("sending to \(address.map { "\($0)" } ?? "the peer") needs setBroadcast(true)")
        case EPERM: self = .permissionDenied("sending to \(address.map { "\($0)" } ?? "the peer") was refused (EPERM)")
        case ENETUNREACH, EHOSTUNREACH: self = .unreachable(address)
        case EDESTADDRREQ, ENOTCONN: self = .notConnected
        default: self = .system("sendmmsg", code)
        }
    }
}
