import LoopKitNet

/// Parses WebSocket frames out of bytes that may arrive split anywhere, validating as it parses
/// (RFC 6455 §5.2–§5.5): a rule broken in the header fails before any of the payload is read.
///
/// Feed it whatever bytes arrived; it consumes what it can and returns at most one frame per call. The
/// header is kept in a small buffer until complete; the payload is unmasked straight into the frame,
/// which never holds more than ``maxFrameSize`` bytes. A frame whose bytes all arrived together can be
/// lent instead (``parseWhole(_:)``): its header is decoded where it lies and its payload, still
/// masked, handed over in place, so the reader unmasks it once, into where it is kept.
///
/// Checks: client frames are masked (``requiresMask``); RSV2 and RSV3 are clear, and RSV1 is set only
/// when permessage-deflate was negotiated (``allowsRSV1``) and never on a control frame; the opcode is
/// defined; control frames have at most 125 bytes and are not fragmented; a 64-bit length has its most
/// significant bit clear; and a frame is at most ``maxFrameSize`` bytes (1009 past it).
///
/// A value type, used on the connection's loop thread.
package struct WebSocketFrameParser {
    /// What a call to ``parse(_:)`` produced.
    package enum Event: Hashable {
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

    /// A decoded, validated frame header.
    struct Head {
        /// The last frame of its message.
        var fin: Bool
        /// RSV1 (compressed, with permessage-deflate).
        var rsv1: Bool
        /// What the payload is.
        var opcode: WebSocketOpcode
        /// The payload's length.
        var length: Int
        /// The masking key (a client's frame), or nil.
        var mask: (UInt8, UInt8, UInt8, UInt8)?

        /// Copies `payload` (this frame's, as it arrived) into `target`, unmasked; returns whether every
        /// byte is ASCII.
        @discardableResult
        func unmask(_ payload: UnsafeRawBufferPointer, into target: UnsafeMutableRawPointer) -> Bool {
            if let mask { return WebSocketFrameParser.unmask(payload, into: target, key: mask, phase: 0) }
            guard let source = payload.baseAddress else { return true }
            target.copyMemory(from: source, byteCount: payload.count)
            return UTF8Validator.isASCII(payload)
        }

        /// The frame, its payload (this frame's, as it arrived) unmasked into an array.
        func frame(unmasking payload: UnsafeRawBufferPointer) -> WebSocketFrame {
            WebSocketFrame(fin: fin, rsv1: rsv1, opcode: opcode, payload: unmaskedBytes(payload))
        }

        /// The payload (this frame's, as it arrived) unmasked into an array.
        func unmaskedBytes(_ payload: UnsafeRawBufferPointer) -> [UInt8] {
            // An empty payload is the empty array: `Array(unsafeUninitializedCapacity: 0)` writes its count
            // into the one empty-array storage every thread shares (a race the thread sanitizer reports).
            guard !payload.isEmpty else { return [] }
            return [UInt8](unsafeUninitializedCapacity: payload.count) { buffer, initialized in
                if let target = buffer.baseAddress { unmask(payload, into: UnsafeMutableRawPointer(target)) }
                initialized = payload.count
            }
        }

        /// The payload (this frame's, as it arrived) unmasked into ``Bytes``: a binary message's own
        /// storage, with the one copy the array would take.
        func unmaskedPayload(_ payload: UnsafeRawBufferPointer) -> Bytes {
            Bytes(unsafeUninitializedCapacity: payload.count) { target in
                _ = unmask(payload, into: target.baseAddress!)
                return payload.count
            }
        }
    }

    /// A frame that arrived whole, lent by ``parseWhole(_:)``.
    struct WholeFrame {
        /// Its header.
        var head: Head
        /// Its payload, in the bytes parsed, still masked.
        var payload: UnsafeRawBufferPointer
        /// The bytes it took, header and payload.
        var consumed: Int
    }

    /// Header bytes received so far (2 to 14).
    private var header: [UInt8] = []
    private var pending: Head?
    private var payload: [UInt8] = []

    /// A parser.
    ///
    /// - Parameters:
    ///   - maxFrameSize: The largest payload accepted (1009 past it).
    ///   - requiresMask: Whether frames must be masked (true on a server).
    ///   - allowsRSV1: Whether RSV1 may be set (permessage-deflate negotiated).
    package init(maxFrameSize: Int, requiresMask: Bool = true, allowsRSV1: Bool = false) {
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
    package mutating func parse(_ bytes: UnsafeRawBufferPointer) throws(WebSocketViolation) -> (event: Event, consumed: Int) {
        var offset = 0
        if pending == nil {
            while pending == nil {
                guard offset < bytes.count else { return (.needMoreBytes, offset) }
                let needed = header.count >= 2 ? Self.headerLength(second: header[1]) : 2
                let take = min(needed - header.count, bytes.count - offset)
                header.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + take)]))
                offset += take
                if header.count >= 2, Self.headerLength(second: header[1]) == header.count {
                    pending = try header.withUnsafeBytes { header in
                        Result { () throws(WebSocketViolation) in try decodeHeader(header) }
                    }.get()
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

    /// Lends the next frame when `bytes` hold all of it and no frame is under way: its header decoded
    /// and validated in place, its payload (still masked) as a slice of `bytes`. Nil, consuming nothing,
    /// when the frame is not all there (then ``parse(_:)`` reads it piece by piece).
    ///
    /// - Parameter bytes: The bytes that arrived (not yet consumed).
    /// - Returns: The frame, lent for as long as `bytes` are, or nil.
    /// - Throws: ``WebSocketViolation`` for a broken rule in the header; the parser is then done.
    mutating func parseWhole(_ bytes: UnsafeRawBufferPointer) throws(WebSocketViolation) -> WholeFrame? {
        guard pending == nil, header.isEmpty, bytes.count >= 2 else { return nil }
        let headerLength = Self.headerLength(second: bytes[1])
        guard bytes.count >= headerLength else { return nil }
        let head = try decodeHeader(UnsafeRawBufferPointer(rebasing: bytes[..<headerLength]))
        guard bytes.count - headerLength >= head.length else { return nil }
        let end = headerLength + head.length
        return WholeFrame(head: head, payload: UnsafeRawBufferPointer(rebasing: bytes[headerLength..<end]), consumed: end)
    }

    /// XORs payload bytes `start..<start + count` with the masking key (payload byte `i` with key byte
    /// `i % 4`), in place, sixteen bytes at a time.
    static func unmask(_ payload: UnsafeMutableRawBufferPointer, from start: Int, count: Int,
                       key: (UInt8, UInt8, UInt8, UInt8)) {
        guard count > 0 else { return }
        let region = UnsafeMutableRawBufferPointer(rebasing: payload[start..<(start + count)])
        unmask(UnsafeRawBufferPointer(region), into: region.baseAddress!, key: key, phase: start & 3)
    }

    /// Copies `source` into `target` (which may be `source` itself) XOR-ed with the masking key, the
    /// first byte with key byte `phase`, the next with key byte `phase + 1` (mod 4) and so on; 64 bytes
    /// a step (four 16-byte vectors), then 16, 8 and 1.
    ///
    /// - Returns: Whether every unmasked byte is ASCII (below 0x80), noted on the way at no extra pass.
    @discardableResult
    static func unmask(_ source: UnsafeRawBufferPointer, into target: UnsafeMutableRawPointer,
                       key: (UInt8, UInt8, UInt8, UInt8), phase: Int) -> Bool {
        guard let from = source.baseAddress else { return true }
        let count = source.count
        // The key from `phase` on, twice over, as eight bytes in memory order: XOR-ing a word is XOR-ing
        // its bytes, and the pattern repeats every four bytes, so every eighth byte starts it again.
        let pattern = withUnsafeBytes(of: (key.0, key.1, key.2, key.3, key.0, key.1, key.2, key.3, key.0, key.1, key.2)) {
            $0.loadUnaligned(fromByteOffset: phase & 3, as: UInt64.self)
        }
        let wide = SIMD2<UInt64>(repeating: pattern)
        var seen = SIMD2<UInt64>(repeating: 0)
        var index = 0
        while count &- index >= 64 {
            let a = from.loadUnaligned(fromByteOffset: index, as: SIMD2<UInt64>.self) ^ wide
            let b = from.loadUnaligned(fromByteOffset: index &+ 16, as: SIMD2<UInt64>.self) ^ wide
            let c = from.loadUnaligned(fromByteOffset: index &+ 32, as: SIMD2<UInt64>.self) ^ wide
            let d = from.loadUnaligned(fromByteOffset: index &+ 48, as: SIMD2<UInt64>.self) ^ wide
            target.storeBytes(of: a, toByteOffset: index, as: SIMD2<UInt64>.self)
            target.storeBytes(of: b, toByteOffset: index &+ 16, as: SIMD2<UInt64>.self)
            target.storeBytes(of: c, toByteOffset: index &+ 32, as: SIMD2<UInt64>.self)
            target.storeBytes(of: d, toByteOffset: index &+ 48, as: SIMD2<UInt64>.self)
            seen |= (a | b) | (c | d)
            index &+= 64
        }
        while count &- index >= 16 {
            let a = from.loadUnaligned(fromByteOffset: index, as: SIMD2<UInt64>.self) ^ wide
            target.storeBytes(of: a, toByteOffset: index, as: SIMD2<UInt64>.self)
            seen |= a
            index &+= 16
        }
        var word = seen[0] | seen[1]
        while index + 8 <= count {
            let unmasked = from.loadUnaligned(fromByteOffset: index, as: UInt64.self) ^ pattern
            target.storeBytes(of: unmasked, toByteOffset: index, as: UInt64.self)
            word |= unmasked
            index += 8
        }
        while index < count {
            let unmasked = from.load(fromByteOffset: index, as: UInt8.self) ^ UInt8(truncatingIfNeeded: pattern >> (8 * UInt64(index & 7)))
            target.storeBytes(of: unmasked, toByteOffset: index, as: UInt8.self)
            word |= UInt64(unmasked)
            index += 1
        }
        return word & 0x8080_8080_8080_8080 == 0
    }

    /// The full header length its second byte announces (mask bit and length code).
    static func headerLength(second: UInt8) -> Int {
        let lengthCode = second & 0x7F
        let extended = lengthCode == 126 ? 2 : lengthCode == 127 ? 8 : 0
        return 2 + extended + (second & 0x80 != 0 ? 4 : 0)
    }

    /// Validates and decodes a complete header.
    private func decodeHeader(_ header: UnsafeRawBufferPointer) throws(WebSocketViolation) -> Head {
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
        return Head(fin: fin, rsv1: rsv1, opcode: opcode, length: Int(length), mask: mask)
    }
}
