/// The opcode of a WebSocket frame (RFC 6455 §5.2): what its payload is.
///
/// A value type: safe from any thread.
package struct WebSocketOpcode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The four-bit opcode.
    package let rawValue: UInt8

    package init(rawValue: UInt8) {
        self.rawValue = rawValue & 0x0F
    }

    /// A further fragment of the message under way.
    package static let continuation = WebSocketOpcode(rawValue: 0x0)
    /// The first frame of a text message (UTF-8).
    package static let text = WebSocketOpcode(rawValue: 0x1)
    /// The first frame of a binary message.
    package static let binary = WebSocketOpcode(rawValue: 0x2)
    /// The close handshake (RFC 6455 §5.5.1).
    package static let close = WebSocketOpcode(rawValue: 0x8)
    /// A ping, answered with a pong (§5.5.2).
    package static let ping = WebSocketOpcode(rawValue: 0x9)
    /// A pong (§5.5.3).
    package static let pong = WebSocketOpcode(rawValue: 0xA)

    /// Whether it is a control frame (close, ping, pong, and the reserved `0xB`–`0xF`).
    var isControl: Bool { rawValue & 0x8 != 0 }

    /// Whether RFC 6455 defines it (the others, `0x3`–`0x7` and `0xB`–`0xF`, are reserved).
    var isDefined: Bool {
        switch rawValue {
        case 0x0, 0x1, 0x2, 0x8, 0x9, 0xA: true
        default: false
        }
    }

    package var description: String {
        switch rawValue {
        case 0x0: "continuation"
        case 0x1: "text"
        case 0x2: "binary"
        case 0x8: "close"
        case 0x9: "ping"
        case 0xA: "pong"
        default: "reserved opcode 0x\(String(rawValue, radix: 16))"
        }
    }
}
