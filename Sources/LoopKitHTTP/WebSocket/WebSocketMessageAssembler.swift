import LoopKitNet

/// Puts data frames together into messages and checks the fragmentation rules (RFC 6455 §5.4): a
/// message starts with a text or binary frame and goes on with continuation frames until one has FIN;
/// a new message inside one, or a continuation outside one, is a protocol error (1002). Text is
/// validated as UTF-8 fragment by fragment (1007 at the first bad one); a message past
/// ``maxMessageSize`` fails with 1009 as soon as it passes it. A transformed message (RSV1 on its first
/// frame, an extension negotiated: permessage-deflate) goes through the extension frame by frame
/// (inflated), and the limit applies to what comes out.
///
/// A value type, used on the connection's loop thread.
struct WebSocketMessageAssembler {
    /// The largest message accepted (after decompression).
    var maxMessageSize: Int

    /// The message under way: its opcode and whether it is compressed.
    private var current: (opcode: WebSocketOpcode, compressed: Bool)?
    private var bytes: [UInt8] = []
    private var validator = UTF8Validator()
    init(maxMessageSize: Int) {
        self.maxMessageSize = maxMessageSize
    }

    /// Whether a message is under way (its first frame came, its last has not).
    var isAssembling: Bool { current != nil }

    /// Takes the next data frame (text, binary or continuation).
    ///
    /// - Parameters:
    ///   - frame: The frame, unmasked.
    ///   - negotiated: The connection's extension (its engine holds it), which takes RSV1 messages.
    /// - Returns: The message it completes, or nil.
    /// - Throws: ``WebSocketViolation`` for a broken rule.
    mutating func append(_ frame: WebSocketFrame,
                         extension negotiated: WebSocketNegotiatedExtension? = nil) throws(WebSocketViolation) -> WebSocketMessage? {
        switch frame.opcode {
        case .continuation:
            guard current != nil else { throw .protocolError("continuation frame outside a message") }
            guard !frame.rsv1 else { throw .protocolError("RSV1 set on a continuation frame") }
        default:
            guard current == nil else { throw .protocolError("new message inside a fragmented one") }
            current = (frame.opcode, frame.rsv1)
        }
        guard let (opcode, compressed) = current else { return nil }
        if compressed {
            guard let negotiated else { throw .protocolError("compressed message without permessage-deflate") }
            var inflated: [UInt8] = []
            let room = maxMessageSize - bytes.count
            try frame.payload.withUnsafeBytes { payload in
                Result { () throws(WebSocketViolation) in try negotiated.inbound(payload, into: &inflated, limit: room) }
            }.get()
            if frame.fin { try negotiated.inboundEnded(into: &inflated, limit: room) }
            try add(inflated, isText: opcode == .text)
        } else {
            try add(frame.payload, isText: opcode == .text)
        }
        guard frame.fin else { return nil }
        return try finish(opcode)
    }

    /// Takes the next data frame as the parser lent it whole (``WebSocketFrameParser/parseWhole(_:)``),
    /// its payload still masked. A frame that is a whole message on its own (FIN, not compressed, no
    /// message under way: the usual case) becomes the message with one copy, unmasked straight into the
    /// `String` or array it is kept in; text that is all ASCII (noted while unmasking) needs no further
    /// check, other text is validated there. Any other frame goes through ``append(_:extension:)``.
    ///
    /// - Parameters:
    ///   - head: The frame's header.
    ///   - maskedPayload: Its payload, as it arrived.
    ///   - negotiated: The connection's extension, for a frame that goes through ``append(_:extension:)``.
    /// - Returns: The message it completes, or nil.
    /// - Throws: ``WebSocketViolation`` for a broken rule.
    mutating func append(_ head: WebSocketFrameParser.Head, maskedPayload: UnsafeRawBufferPointer,
                         extension negotiated: WebSocketNegotiatedExtension? = nil) throws(WebSocketViolation) -> WebSocketMessage? {
        guard head.fin, !head.rsv1, current == nil, head.opcode == .text || head.opcode == .binary else {
            return try append(head.frame(unmasking: maskedPayload), extension: negotiated)
        }
        guard maskedPayload.count <= maxMessageSize else { throw .tooBig("message larger than \(maxMessageSize) bytes") }
        guard head.opcode == .text else { return .binary(head.unmaskedPayload(maskedPayload)) }
        var isValid = true
        let text = String(unsafeUninitializedCapacity: maskedPayload.count) { target in
            guard let base = target.baseAddress else { return 0 }
            if !head.unmask(maskedPayload, into: UnsafeMutableRawPointer(base)) {
                var validator = UTF8Validator()
                isValid = validator.validate(UnsafeRawBufferPointer(target)) && validator.isComplete
            }
            return target.count
        }
        guard isValid else { throw .invalidUTF8("text message is not UTF-8") }
        return .text(text)
    }

    /// Adds message bytes (decompressed), checking size and, for text, UTF-8.
    private mutating func add(_ piece: [UInt8], isText: Bool) throws(WebSocketViolation) {
        guard bytes.count + piece.count <= maxMessageSize else {
            throw .tooBig("message larger than \(maxMessageSize) bytes")
        }
        if isText {
            guard validator.validate(piece) else { throw .invalidUTF8("text message is not UTF-8") }
        }
        if bytes.isEmpty { bytes = piece } else { bytes.append(contentsOf: piece) }
    }

    /// The last frame arrived: the message, and a fresh start for the next.
    private mutating func finish(_ opcode: WebSocketOpcode) throws(WebSocketViolation) -> WebSocketMessage {
        defer {
            current = nil
            bytes = []
            validator.reset()
        }
        if opcode == .text {
            guard validator.isComplete else { throw .invalidUTF8("text message ends inside a character") }
            return .text(String(decoding: bytes, as: UTF8.self))
        }
        return .binary(Bytes(bytes))
    }
}
