#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Why a listener, a connect or a connection operation failed.
public enum NetError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Another socket is bound to the address (`EADDRINUSE`).
    case addressInUse(SocketAddress)
    /// The process may not bind or connect there (`EACCES`, `EPERM`): a port below 1024 without the
    /// capability, or a Unix-domain path in a directory it cannot write.
    case permissionDenied(String)
    /// The address cannot be used: not a numeric address, a port out of range, no such interface
    /// (`EADDRNOTAVAIL`), an unsupported family.
    case invalidAddress(String)
    /// The host name did not resolve.
    case nameResolutionFailed(host: String, reason: String)
    /// Nothing listens at the address (`ECONNREFUSED`).
    case connectionRefused(SocketAddress)
    /// The connect did not finish within its timeout.
    case connectTimedOut
    /// The connection has ended (or is closing) and refuses the operation; the reason it ended.
    case connectionClosed(CloseReason)
    /// The loop has begun to shut down.
    case loopShutDown
    /// TLS failed: a configuration OpenSSL refused, or a handshake that failed (a certificate that does
    /// not verify, no protocol in common, a timeout); OpenSSL's reason.
    case tls(String)
    /// A system call failed: its name and `errno`.
    case system(String, Int32)
    /// A line read with ``ByteLines`` (`connection.inbound.lines()`) went past its length limit without a
    /// newline: the peer sends something that is not lines, or lines too long to hold.
    case lineTooLong(limit: Int)

    /// A short English description with the details.
    public var description: String {
        switch self {
        case .addressInUse(let address): "address already in use: \(address)"
        case .permissionDenied(let what): "permission denied: \(what)"
        case .invalidAddress(let what): "invalid address: \(what)"
        case .nameResolutionFailed(let host, let reason): "cannot resolve '\(host)': \(reason)"
        case .connectionRefused(let address): "connection refused by \(address)"
        case .connectTimedOut: "connect timed out"
        case .connectionClosed(let reason): "connection closed (\(reason))"
        case .loopShutDown: "the loop is shutting down"
        case .tls(let reason): "TLS: \(reason)"
        case .system(let call, let code): "\(call) failed: \(String(cString: strerror(code))) (errno \(code))"
        case .lineTooLong(let limit): "a line longer than \(limit) bytes, without a newline"
        }
    }
}

/// Why a connection ended; each connection reports exactly one, once.
public enum CloseReason: Sendable, Hashable, CustomStringConvertible {
    /// This side called ``Connection/close()``; buffered output was flushed first.
    case closedLocally
    /// This side called ``Connection/abort()``: buffered output was dropped, the peer got a reset.
    case aborted
    /// The peer closed its side and this side had nothing left to do (end of file).
    case peerClosed
    /// The peer reset the connection (`ECONNRESET`).
    case reset
    /// The peer went away while this side was writing (`EPIPE`).
    case brokenPipe
    /// A timeout set in ``ConnectionOptions`` expired.
    case timedOut(Timeout)
    /// The connection's loop shut down, or its listener closed it on shutdown.
    case shutDown
    /// Any other socket error, with its `errno`.
    case failed(Int32)
    /// TLS failed: the handshake (garbage instead of a ClientHello, a certificate refused, a timeout) or a
    /// record the peer sent; OpenSSL's reason.
    case tls(String)

    /// Which timeout expired.
    public enum Timeout: Sendable, Hashable {
        /// No bytes arrived within ``ConnectionOptions/readTimeout`` while the connection was reading.
        case read
        /// Buffered output made no progress within ``ConnectionOptions/writeTimeout``.
        case write
        /// Nothing was read or written within ``ConnectionOptions/idleTimeout``.
        case idle
    }

    /// Whether the connection ended without an error (a local close or the peer's end of file).
    public var isClean: Bool {
        switch self {
        case .closedLocally, .peerClosed: true
        default: false
        }
    }

    /// The reason for a socket error number.
    package init(errno code: Int32) {
        switch code {
        case ECONNRESET: self = .reset
        case EPIPE: self = .brokenPipe
        case ETIMEDOUT: self = .timedOut(.write)
        default: self = .failed(code)
        }
    }

    /// A short English description.
    public var description: String {
        switch self {
        case .closedLocally: "closed locally"
        case .aborted: "aborted"
        case .peerClosed: "closed by the peer"
        case .reset: "reset by the peer"
        case .brokenPipe: "broken pipe"
        case .timedOut(let which): "\(which) timeout"
        case .shutDown: "shut down"
        case .failed(let code): "socket error: \(String(cString: strerror(code))) (errno \(code))"
        case .tls(let reason): "TLS: \(reason)"
        }
    }
}
