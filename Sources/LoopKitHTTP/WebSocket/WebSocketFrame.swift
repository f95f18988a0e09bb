/// One WebSocket frame, unmasked (RFC 6455 §5.2).
///
/// A value type: safe from any thread.
package struct WebSocketFrame: Hashable, Sendable {
    /// The last frame of its message (always set on a control frame).
    package var fin: Bool
    /// RSV1: the message is compressed (permessage-deflate, RFC 7692), on its first frame only.
    package var rsv1: Bool
    /// What the payload is.
    package var opcode: WebSocketOpcode
    /// The payload, unmasked.
    package var payload: [UInt8]

    package init(fin: Bool = true, rsv1: Bool = false, opcode: WebSocketOpcode, payload: [UInt8] = []) {
        self.fin = fin
        self.rsv1 = rsv1
        self.opcode = opcode
        self.payload = payload
    }
}
