/// Parses WebSocket frames out of bytes that may arrive split anywhere, validating as it parses
/// (RFC 6455 §5.2–§5.5): a rule broken in the header fails before any of the payload is read.
///
/// Feed it whatever bytes arrived; it consumes what it can and returns at most one frame per call. The
/// header is kept in a small buffer until complete; the payload is unmasked straight into the frame,
/// which never holds more than ``maxFrameSize`` bytes.
///
/// Checks: client frames are masked (``requiresMask``); RSV2 and RSV3 are clear, and RSV1 is set only
/// when permessage-deflate was negotiated (``allowsRSV1``) and never on a control frame; the opcode is
/// defined; control frames have at most 125 bytes and are not fragmented; a 64-bit length has its most
/// significant bit clear; and a frame is at most ``maxFrameSize`` bytes (1009 past it).
///
/// A value type, used on the connection's loop thread.
struct WebSocketFrameParser {
    /// What a call to ``parse(_:)`` produced.
    enum Event: Hashable {
        /// The bytes end inside a frame: feed more.
        case needMoreBytes
        /// A complete frame.
        case frame(WebSocketFrame)
    }

    /// The largest frame payload accepted.
    var maxFrameSize: Int
    /// Frames must be masked (a server parsing a client's frames); false parses a server's frames.
    var requiresMask: Bool
    /// RSV1 may be set (permessage-deflate was negotiated).
    var allowsRSV1: Bool

    /// The frame whose payload is being read.
    private struct Pending {
        var fin: Bool
        var rsv1: Bool
        var opcode: WebSocketOpcode
        var length: Int
        var mask: (UInt8, UInt8, UInt8, UInt8)?
    }

    /// Header bytes received so far (2 to 14).
    private var header: [UInt8] = []
    private var pending: Pending?
    private var payload: [UInt8] = []

    /// A parser.
    ///
    /// - Parameters:
    ///   - maxFrameSize: The largest payload accepted (1009 past it).
    ///   - requiresMask: Whether frames must be masked (true on a server).
    ///   - allowsRSV1: Whether RSV1 may be set (permessage-deflate negotiated).
    init(maxFrameSize: Int, requiresMask: Bool = true, allowsRSV1: Bool = false) {
        self.maxFrameSize = maxFrameSize
        self.requiresMask = requiresMask
        self.allowsRSV1 = allowsRSV1
        header.reserveCapacity(14)
    }

    /// Consumes bytes until a frame is complete or the bytes run out.
    ///
    /// - Parameter bytes: The bytes that arrived (not yet consumed).
    /// - Returns: The event and how many bytes were consumed; ``Event/needMoreBytes`` consumes them all.
    /// - Throws: ``WebSocketViolation`` for a broken rule; the parser is then done.
    mutating func parse(_ bytes: UnsafeRawBufferPointer) throws(WebSocketViolation) -> (event: Event, consumed: Int) {
        var offset = 0
        if pending == nil {
            while pending == nil {
                guard offset < bytes.count else { return (.needMoreBytes, offset) }
                let needed = try headerLength()
                let take = min(needed - header.count, bytes.count - offset)
                header.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + take)]))
                offset += take
                if header.count >= 2, try headerLength() == header.count {
                    pending = try decodeHeader()
                    header.removeAll(keepingCapacity: true)
                }
            }
        }
        guard let frame = pending else { return (.needMoreBytes, offset) }
        let take = min(frame.length - payload.count, bytes.count - offset)
        if take > 0 {
            let start = payload.count
            payload.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + take)]))
            if let mask = frame.mask {
                payload.withUnsafeMutableBytes { Self.unmask($0, from: start, count: take, key: mask) }
            }
            offset += take
        }
        guard payload.count == frame.length else { return (.needMoreBytes, offset) }
        pending = nil
        let complete = WebSocketFrame(fin: frame.fin, rsv1: frame.rsv1, opcode: frame.opcode, payload: payload)
        payload = []
        return (.frame(complete), offset)
    }

    /// XORs payload bytes `start..<start + count` with the masking key (payload byte `i` with key byte
    /// `i % 4`), eight bytes at a time once `start` is on a key boundary.
    static func unmask(_ payload: UnsafeMutableRawBufferPointer, from start: Int, count: Int,
                       key: (UInt8, UInt8, UInt8, UInt8)) {
        func keyByte(_ index: Int) -> UInt8 {
            switch index & 3 {
            case 0: key.0
            case 1: key.1
            case 2: key.2
            default: key.3
            }
        }
        let end = start + count
        var index = start
        while index < end && index & 3 != 0 {
            payload[index] ^= keyByte(index)
            index += 1
        }
        // The key twice over, as eight bytes in memory order: XOR-ing a word is XOR-ing its bytes.
        let word = withUnsafeBytes(of: (key.0, key.1, key.2, key.3, key.0, key.1, key.2, key.3)) { $0.loadUnaligned(as: UInt64.self) }
        while index + 8 <= end {
            payload.storeBytes(of: payload.loadUnaligned(fromByteOffset: index, as: UInt64.self) ^ word, toByteOffset: index, as: UInt64.self)
            index += 8
        }
        while index < end {
            payload[index] ^= keyByte(index)
            index += 1
        }
    }

    /// The full header length the bytes so far announce (2 until the second byte is known); checks the
    /// first two bytes as soon as they are there.
    private func headerLength() throws(WebSocketViolation) -> Int {
        guard header.count >= 2 else { return 2 }
        let lengthCode = header[1] & 0x7F
        let extended = lengthCode == 126 ? 2 : lengthCode == 127 ? 8 : 0
        return 2 + extended + (header[1] & 0x80 != 0 ? 4 : 0)
    }

    /// Validates and decodes a complete header.
    private func decodeHeader() throws(WebSocketViolation) -> Pending {
        let first = header[0], second = header[1]
        let fin = first & 0x80 != 0
        let rsv1 = first & 0x40 != 0
        let opcode = WebSocketOpcode(rawValue: first)
        guard first & 0x30 == 0 else { throw .protocolError("RSV2 or RSV3 set without an extension that defines it") }
        guard opcode.isDefined else { throw .protocolError("\(opcode)") }
        if rsv1 {
            guard allowsRSV1 else { throw .protocolError("RSV1 set without permessage-deflate") }
            guard !opcode.isControl else { throw .protocolError("RSV1 set on a control frame") }
        }
        let masked = second & 0x80 != 0
        if requiresMask && !masked { throw .protocolError("client frame not masked") }
        var length: UInt64 = UInt64(second & 0x7F)
        var index = 2
        if length == 126 {
            length = UInt64(header[2]) << 8 | UInt64(header[3])
            index = 4
        } else if length == 127 {
            length = 0
            for byte in header[2..<10] { length = length << 8 | UInt64(byte) }
            guard length >> 63 == 0 else { throw .protocolError("64-bit length with its most significant bit set") }
            index = 10
        }
        if opcode.isControl {
            guard fin else { throw .protocolError("fragmented control frame") }
            guard length <= 125 else { throw .protocolError("control frame longer than 125 bytes") }
        }
        guard length <= UInt64(maxFrameSize) else { throw .tooBig("frame larger than \(maxFrameSize) bytes") }
        let mask = masked ? (header[index], header[index + 1], header[index + 2], header[index + 3]) : nil
        return Pending(fin: fin, rsv1: rsv1, opcode: opcode, length: Int(length), mask: mask)
    }
}
