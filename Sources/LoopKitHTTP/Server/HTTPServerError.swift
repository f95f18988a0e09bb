import LoopKitNet

/// Errors the server reports to its caller or to a streaming handler.
public enum HTTPServerError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The client closed the connection (or it failed) before the body was written.
    case connectionClosed
    /// The server could not listen: why (the address is in use, not a numeric address, not permitted, …).
    case cannotListen(NetError)
    /// A configuration value is out of range.
    case invalidConfiguration(String)

    /// A sentence for logs.
    public var description: String {
        switch self {
        case .connectionClosed: "the connection is closed"
        case .cannotListen(let reason): "cannot listen: \(reason)"
        case .invalidConfiguration(let reason): "invalid configuration: \(reason)"
        }
    }
}
