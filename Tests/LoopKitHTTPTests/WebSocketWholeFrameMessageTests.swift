import Testing
@testable import LoopKitHTTP

/// A data frame that is a whole message on its own, lent in place by the parser, becomes the message
/// with one copy: unmasked straight into its `String` (text) or array (binary), checked as before.
@Suite("WebSocket messages from whole frames")
struct WebSocketWholeFrameMessageTests {
    let mask: [UInt8] = [0x37, 0xFA, 0x21, 0x3D]

    /// The message the assembler makes of `frame`, sent masked and lent whole.
    func message(of frame: WebSocketFrame, maxMessageSize: Int = 1 << 20,
                 assembler: inout WebSocketMessageAssembler) throws(WebSocketViolation) -> WebSocketMessage? {
        var parser = WebSocketFrameParser(maxFrameSize: 1 << 20)
        let wire = WebSocketFrameEncoder.encode(frame, maskKey: mask)
        return try wire.withUnsafeBytes { bytes in
            Result { () throws(WebSocketViolation) -> WebSocketMessage? in
                guard let whole = try parser.parseWhole(bytes) else {
                    Issue.record("a whole frame was not lent")
                    return nil
                }
                return try assembler.append(whole.head, maskedPayload: whole.payload)
            }
        }.get()
    }

    func message(of frame: WebSocketFrame, maxMessageSize: Int = 1 << 20) throws(WebSocketViolation) -> WebSocketMessage? {
        var assembler = WebSocketMessageAssembler(maxMessageSize: maxMessageSize)
        return try message(of: frame, assembler: &assembler)
    }

    func violation(_ frame: WebSocketFrame, maxMessageSize: Int = 1 << 20) -> WebSocketViolation? {
        do {
            _ = try message(of: frame, maxMessageSize: maxMessageSize)
            return nil
        } catch {
            return error
        }
    }

    /// ASCII text (no check beyond the unmasking), text with characters of every UTF-8 length at every
    /// position across the copy's 32- and 8-byte steps, and empty text: each equals its bytes.
    @Test func textEqualsItsBytes() throws {
        var texts = ["", "a", "Hello", String(repeating: "x", count: 1024)]
        for position in 0..<40 {
            texts.append(String(repeating: "a", count: position) + "é€😀" + String(repeating: "b", count: 40 - position))
        }
        for text in texts {
            let made = try message(of: WebSocketFrame(opcode: .text, payload: Array(text.utf8)))
            #expect(made == .text(text), "\(text.utf8.count) bytes")
            if case .text(let made)? = made { #expect(Array(made.utf8) == Array(text.utf8)) }
        }
    }

    @Test func binaryEqualsItsBytes() throws {
        for count in [0, 1, 7, 8, 31, 32, 33, 1024, 70_000] {
            let bytes = (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 131) }
            #expect(try message(of: WebSocketFrame(opcode: .binary, payload: bytes)) == .binary(Bytes(bytes)), "\(count) bytes")
        }
    }

    /// Text that is not UTF-8 fails with 1007, wherever the bad bytes are and whatever text precedes them.
    @Test func textThatIsNotUTF8FailsWith1007() {
        let bad: [[UInt8]] = [[0xC0, 0xAF], [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80], [0x80], [0xE2, 0x82], [0xFF]]
        for bytes in bad {
            for prefix in [0, 5, 32, 100] {
                let payload = [UInt8](repeating: UInt8(ascii: "a"), count: prefix) + bytes
                #expect(violation(WebSocketFrame(opcode: .text, payload: payload))?.code == .invalidFramePayloadData, "\(bytes) after \(prefix)")
            }
        }
    }

    @Test func messagePastTheLimitFailsWith1009() {
        let frame = WebSocketFrame(opcode: .binary, payload: [UInt8](repeating: 1, count: 101))
        #expect(violation(frame, maxMessageSize: 100)?.code == .messageTooBig)
        #expect(violation(WebSocketFrame(opcode: .text, payload: [UInt8](repeating: 0x61, count: 101)), maxMessageSize: 100)?.code == .messageTooBig)
        #expect(violation(WebSocketFrame(opcode: .binary, payload: [UInt8](repeating: 1, count: 100)), maxMessageSize: 100) == nil)
    }

    /// A whole frame that opens or goes on with a fragmented message is assembled as any other frame:
    /// the fragmentation rules and the incremental UTF-8 check still apply.
    @Test func framesOfAFragmentedMessageAreAssembledAsBefore() throws {
        var assembler = WebSocketMessageAssembler(maxMessageSize: 1 << 20)
        #expect(try message(of: WebSocketFrame(fin: false, opcode: .text, payload: Array("κό".utf8) + [0xCF]), assembler: &assembler) == nil)
        #expect(try message(of: WebSocketFrame(fin: true, opcode: .continuation, payload: [0x83] + Array("με".utf8)), assembler: &assembler)
                == .text("κόσμε"))
        #expect(violation(WebSocketFrame(opcode: .continuation, payload: [1]))?.code == .protocolError)
        var inside = WebSocketMessageAssembler(maxMessageSize: 1 << 20)
        _ = try message(of: WebSocketFrame(fin: false, opcode: .binary, payload: [1]), assembler: &inside)
        #expect(throws: WebSocketViolation.self) {
            _ = try message(of: WebSocketFrame(opcode: .text, payload: Array("new".utf8)), assembler: &inside)
        }
    }
}
