/// Why a WebSocket ended other than by a clean close handshake, or why it cannot send.
///
/// A value type: safe from any thread.
public enum WebSocketError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The socket is closing or closed (by either side): nothing more can be sent. Thrown by the sends;
    /// carries the close code and reason (1005 when the close frame had none).
    case closed(WebSocketCloseCode, reason: String)
    /// The peer broke a rule of RFC 6455 or RFC 7692, or passed a size limit: the server closed with
    /// this code (1002 protocol error, 1007 invalid text, 1009 too big) and reason.
    case protocolViolation(WebSocketCloseCode, reason: String)
    /// The connection ended without a close handshake (close code 1006): the peer went away, the
    /// connection was reset, or the server aborted it (graceful shutdown's deadline, say).
    case connectionLost
    /// The peer did not answer a keep-alive ping within ``WebSocketConfiguration/pingTimeout``.
    case pingTimeout

    /// A sentence for logs.
    public var description: String {
        switch self {
        case .closed(let code, let reason):
            reason.isEmpty ? "the WebSocket is closed (\(code))" : "the WebSocket is closed (\(code)): \(reason)"
        case .protocolViolation(let code, let reason): "the peer broke the WebSocket protocol (\(code)): \(reason)"
        case .connectionLost: "the WebSocket connection ended without a close handshake"
        case .pingTimeout: "the peer did not answer a keep-alive ping in time"
        }
    }
}
