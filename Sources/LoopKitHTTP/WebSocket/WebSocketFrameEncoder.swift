/// Serialises WebSocket frames (RFC 6455 §5.2): the shortest length encoding, masked when given a key
/// (a client's frames; a server's are not masked).
///
/// Stateless: safe from any thread.
package enum WebSocketFrameEncoder {
    /// Appends a frame's header to `buffer`.
    ///
    /// - Parameters:
    ///   - buffer: Where the bytes go.
    ///   - fin: The frame ends its message.
    ///   - rsv1: The message is compressed (its first frame only).
    ///   - opcode: The opcode.
    ///   - length: The payload length.
    ///   - maskKey: The masking key (a client); nil for none (a server).
    static func appendHeader(into buffer: inout [UInt8], fin: Bool, rsv1: Bool = false, opcode: WebSocketOpcode,
                             length: Int, maskKey: [UInt8]? = nil) {
        buffer.append((fin ? 0x80 : 0) | (rsv1 ? 0x40 : 0) | opcode.rawValue)
        let maskBit: UInt8 = maskKey == nil ? 0 : 0x80
        if length <= 125 {
            buffer.append(maskBit | UInt8(length))
        } else if length <= 0xFFFF {
            buffer.append(maskBit | 126)
            buffer.append(UInt8(length >> 8))
            buffer.append(UInt8(length & 0xFF))
        } else {
            buffer.append(maskBit | 127)
            for shift in stride(from: 56, through: 0, by: -8) { buffer.append(UInt8((UInt64(length) >> UInt64(shift)) & 0xFF)) }
        }
        if let maskKey { buffer.append(contentsOf: maskKey.prefix(4)) }
    }

    /// The most bytes an unmasked frame header takes (2, a 64-bit length).
    static let maxUnmaskedHeaderLength = 10

    /// Writes an unmasked frame header (a server's) at the start of `buffer`, which has room for
    /// ``maxUnmaskedHeaderLength`` bytes.
    ///
    /// - Parameters:
    ///   - buffer: Where the bytes go.
    ///   - fin: The frame ends its message.
    ///   - rsv1: The message is compressed (its first frame only).
    ///   - opcode: The opcode.
    ///   - length: The payload length.
    /// - Returns: The header's length.
    static func writeHeader(into buffer: UnsafeMutableRawBufferPointer, fin: Bool, rsv1: Bool = false,
                            opcode: WebSocketOpcode, length: Int) -> Int {
        precondition(buffer.count >= maxUnmaskedHeaderLength, "WebSocket frame header buffer too small")
        buffer[0] = (fin ? 0x80 : 0) | (rsv1 ? 0x40 : 0) | opcode.rawValue
        if length <= 125 {
            buffer[1] = UInt8(length)
            return 2
        } else if length <= 0xFFFF {
            buffer[1] = 126
            buffer[2] = UInt8(length >> 8)
            buffer[3] = UInt8(length & 0xFF)
            return 4
        } else {
            buffer[1] = 127
            for index in 0..<8 { buffer[2 + index] = UInt8((UInt64(length) >> UInt64(56 - 8 * index)) & 0xFF) }
            return 10
        }
    }

    /// Appends a whole frame to `buffer`: its header, then its payload (masked with `maskKey`, if any).
    ///
    /// - Parameters:
    ///   - frame: The frame.
    ///   - buffer: Where the bytes go.
    ///   - maskKey: The four-byte masking key, or nil.
    static func append(_ frame: WebSocketFrame, into buffer: inout [UInt8], maskKey: [UInt8]? = nil) {
        frame.payload.withUnsafeBytes { payload in
            append(fin: frame.fin, rsv1: frame.rsv1, opcode: frame.opcode, payload: payload, into: &buffer, maskKey: maskKey)
        }
    }

    /// Appends a frame whose payload is lent.
    static func append(fin: Bool, rsv1: Bool = false, opcode: WebSocketOpcode, payload: UnsafeRawBufferPointer,
                       into buffer: inout [UInt8], maskKey: [UInt8]? = nil) {
        appendHeader(into: &buffer, fin: fin, rsv1: rsv1, opcode: opcode, length: payload.count, maskKey: maskKey)
        let start = buffer.count
        buffer.append(contentsOf: payload)
        if let maskKey {
            for index in 0..<payload.count { buffer[start + index] ^= maskKey[index & 3] }
        }
    }

    /// The bytes of one frame.
    ///
    /// - Parameters:
    ///   - frame: The frame.
    ///   - maskKey: The four-byte masking key, or nil.
    /// - Returns: Header and payload.
    package static func encode(_ frame: WebSocketFrame, maskKey: [UInt8]? = nil) -> [UInt8] {
        var buffer: [UInt8] = []
        buffer.reserveCapacity(frame.payload.count + 14)
        append(frame, into: &buffer, maskKey: maskKey)
        return buffer
    }

    /// The payload of a close frame: the code, big-endian, then the reason's UTF-8, cut to fit the 125
    /// bytes of a control frame on a character boundary. Empty for no code.
    ///
    /// - Parameters:
    ///   - code: The code (nil: an empty close frame).
    ///   - reason: The reason.
    /// - Returns: The payload.
    static func closePayload(code: WebSocketCloseCode?, reason: String) -> [UInt8] {
        guard let code else { return [] }
        var payload = [UInt8(code.rawValue >> 8), UInt8(code.rawValue & 0xFF)]
        var used = 0
        for character in reason {
            let bytes = character.utf8.count
            guard used + bytes <= 123 else { break }
            payload.append(contentsOf: character.utf8)
            used += bytes
        }
        return payload
    }
}
