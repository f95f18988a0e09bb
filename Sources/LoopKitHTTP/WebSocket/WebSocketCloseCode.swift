/// The status code of a WebSocket close (RFC 6455 §7.4).
///
/// ```swift
/// socket.close(code: .goingAway, reason: "restarting")
/// socket.close(code: WebSocketCloseCode(rawValue: 4000), reason: "application-defined")
/// ```
/// ``noStatusReceived`` (1005) and ``abnormalClosure`` (1006) describe how a socket ended and are never
/// sent in a close frame; ``isValidOnTheWire`` tells which codes a close frame may carry.
///
/// A value type: safe from any thread.
public struct WebSocketCloseCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The two-byte code.
    public let rawValue: UInt16

    /// A code; whether it may be sent is ``isValidOnTheWire``.
    ///
    /// - Parameter rawValue: The code, 1000–4999 for a valid one.
    public init(rawValue: UInt16) {
        self.rawValue = rawValue
    }

    /// 1000: the purpose of the connection is fulfilled.
    public static let normalClosure = WebSocketCloseCode(rawValue: 1000)
    /// 1001: the endpoint goes away (the server shuts down, a page is left).
    public static let goingAway = WebSocketCloseCode(rawValue: 1001)
    /// 1002: the peer broke the protocol.
    public static let protocolError = WebSocketCloseCode(rawValue: 1002)
    /// 1003: a kind of data the endpoint cannot accept (binary to a text-only endpoint, say).
    public static let unsupportedData = WebSocketCloseCode(rawValue: 1003)
    /// 1005: the close frame carried no code. Never sent on the wire.
    public static let noStatusReceived = WebSocketCloseCode(rawValue: 1005)
    /// 1006: the connection ended without a close frame. Never sent on the wire.
    public static let abnormalClosure = WebSocketCloseCode(rawValue: 1006)
    /// 1007: a message's data does not match its type (a text message that is not UTF-8).
    public static let invalidFramePayloadData = WebSocketCloseCode(rawValue: 1007)
    /// 1008: a message broke the endpoint's policy.
    public static let policyViolation = WebSocketCloseCode(rawValue: 1008)
    /// 1009: a frame or message is larger than the endpoint accepts.
    public static let messageTooBig = WebSocketCloseCode(rawValue: 1009)
    /// 1010: the client needed an extension the server did not negotiate.
    public static let mandatoryExtension = WebSocketCloseCode(rawValue: 1010)
    /// 1011: the server met an unexpected condition.
    public static let internalServerError = WebSocketCloseCode(rawValue: 1011)

    /// Whether a close frame may carry this code: 1000–1003, 1007–1014 (RFC 6455 §7.4.1 and the IANA
    /// registry), and 3000–4999 (registered and private use). Not 1004, 1005, 1006, 1015, nor anything
    /// below 1000, in 1016–2999 or above 4999.
    public var isValidOnTheWire: Bool {
        switch rawValue {
        case 1000...1003, 1007...1014, 3000...4999: true
        default: false
        }
    }

    /// The number and, for the codes RFC 6455 names, the name: `1001 (going away)`.
    public var description: String {
        let name: String? = switch rawValue {
        case 1000: "normal closure"
        case 1001: "going away"
        case 1002: "protocol error"
        case 1003: "unsupported data"
        case 1005: "no status received"
        case 1006: "abnormal closure"
        case 1007: "invalid frame payload data"
        case 1008: "policy violation"
        case 1009: "message too big"
        case 1010: "mandatory extension"
        case 1011: "internal server error"
        default: nil
        }
        return name.map { "\(rawValue) (\($0))" } ?? "\(rawValue)"
    }
}
