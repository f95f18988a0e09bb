import Dispatch
import Testing
@testable import LoopKitHTTP

/// Parses every frame out of `chunks`, fed one after the other as a socket would deliver them.
func parseFrames(_ chunks: [[UInt8]], parser: inout WebSocketFrameParser) throws(WebSocketViolation) -> [WebSocketFrame] {
    var frames: [WebSocketFrame] = []
    for chunk in chunks {
        var offset = 0
        while offset < chunk.count {
            let result = chunk[offset...].withUnsafeBytes { bytes in Result { () throws(WebSocketViolation) in try parser.parse(bytes) } }
            let (event, consumed) = try result.get()
            offset += consumed
            if case .frame(let frame) = event { frames.append(frame) }
        }
    }
    return frames
}

/// Parses every frame out of `chunks` as the server's WebSocket reads them: a frame all in the bytes
/// at hand is lent whole (``WebSocketFrameParser/parseWhole(_:)``) and unmasked from where it lies,
/// anything else is read piece by piece.
func parseFramesLendingWhole(_ chunks: [[UInt8]], parser: inout WebSocketFrameParser) throws(WebSocketViolation) -> [WebSocketFrame] {
    var frames: [WebSocketFrame] = []
    for chunk in chunks {
        var offset = 0
        while offset < chunk.count {
            let result = chunk[offset...].withUnsafeBytes { bytes in
                Result { () throws(WebSocketViolation) -> (WebSocketFrame?, Int) in
                    if let whole = try parser.parseWhole(bytes) { return (whole.head.frame(unmasking: whole.payload), whole.consumed) }
                    let (event, consumed) = try parser.parse(bytes)
                    guard case .frame(let frame) = event else { return (nil, consumed) }
                    return (frame, consumed)
                }
            }
            let (frame, consumed) = try result.get()
            offset += consumed
            if let frame { frames.append(frame) }
        }
    }
    return frames
}

@Suite("WebSocket frame codec")
struct WebSocketFrameCodecTests {
    let mask: [UInt8] = [0x37, 0xFA, 0x21, 0x3D]

    /// Frames of every length encoding: 7-bit, 16-bit and 64-bit lengths, control and fragments.
    var sample: [WebSocketFrame] {
        [
            WebSocketFrame(opcode: .text, payload: Array("Hello".utf8)),
            WebSocketFrame(fin: false, opcode: .binary, payload: (0..<300).map { UInt8($0 & 0xFF) }),
            WebSocketFrame(opcode: .ping, payload: [1, 2, 3]),
            WebSocketFrame(fin: true, opcode: .continuation, payload: (0..<70_000).map { UInt8($0 % 251) }),
            WebSocketFrame(opcode: .close, payload: [0x03, 0xE8]),
            WebSocketFrame(opcode: .pong),
        ]
    }

    @Test func encodesTheShortestLengthForm() {
        #expect(WebSocketFrameEncoder.encode(WebSocketFrame(opcode: .text, payload: [UInt8](repeating: 0, count: 125))).count == 127)
        #expect(WebSocketFrameEncoder.encode(WebSocketFrame(opcode: .text, payload: [UInt8](repeating: 0, count: 126))).count == 130)
        #expect(WebSocketFrameEncoder.encode(WebSocketFrame(opcode: .text, payload: [UInt8](repeating: 0, count: 65_535))).count == 65_539)
        #expect(WebSocketFrameEncoder.encode(WebSocketFrame(opcode: .text, payload: [UInt8](repeating: 0, count: 65_536))).count == 65_546)
        #expect(WebSocketFrameEncoder.encode(WebSocketFrame(opcode: .text, payload: Array("Hi".utf8))) == [0x81, 0x02, 0x48, 0x69])
    }

    @Test func masksAsRFC6455Example() {
        // RFC 6455 §5.7: a masked "Hello".
        let bytes = WebSocketFrameEncoder.encode(WebSocketFrame(opcode: .text, payload: Array("Hello".utf8)), maskKey: mask)
        #expect(bytes == [0x81, 0x85, 0x37, 0xFA, 0x21, 0x3D, 0x7F, 0x9F, 0x4D, 0x51, 0x58])
    }

    @Test func parsesFramesSplitAtEveryPosition() throws {
        var wire: [UInt8] = []
        for frame in sample { WebSocketFrameEncoder.append(frame, into: &wire, maskKey: mask) }
        // Every split point in the headers and around them, and a stride through the big payload.
        let positions = Array(0...400) + Array(stride(from: 401, to: wire.count, by: 1999)) + [wire.count - 1, wire.count]
        for split in positions {
            var parser = WebSocketFrameParser(maxFrameSize: 1 << 20)
            let frames = try parseFrames([Array(wire[..<split]), Array(wire[split...])], parser: &parser)
            #expect(frames == sample, "split at \(split)")
        }
    }

    /// Frames lent whole where they lie and frames read piece by piece, in any mix, parse to the same
    /// frames: split at every position, the frames before the split and after it are whole.
    @Test func lendsWholeFramesInPlaceAndReadsTheRestPieceByPiece() throws {
        var wire: [UInt8] = []
        for frame in sample { WebSocketFrameEncoder.append(frame, into: &wire, maskKey: mask) }
        let positions = Array(0...400) + Array(stride(from: 401, to: wire.count, by: 1999)) + [wire.count - 1, wire.count]
        for split in positions {
            var parser = WebSocketFrameParser(maxFrameSize: 1 << 20)
            let frames = try parseFramesLendingWhole([Array(wire[..<split]), Array(wire[split...])], parser: &parser)
            #expect(frames == sample, "split at \(split)")
        }
        var unmasked = WebSocketFrameParser(maxFrameSize: 1 << 20, requiresMask: false)
        var serverWire: [UInt8] = []
        for frame in sample { WebSocketFrameEncoder.append(frame, into: &serverWire) }
        #expect(try parseFramesLendingWhole([serverWire], parser: &unmasked) == sample)
    }

    /// Frames with empty payloads, parsed on several threads at once (as several loops do), share nothing:
    /// run under the thread sanitizer (`make test-sanitize`) this failed while an empty payload was made
    /// with `Array(unsafeUninitializedCapacity: 0)`, which writes into the one empty-array storage.
    @Test func emptyPayloadsParseOnSeveralThreadsAtOnce() {
        let frame = WebSocketFrameEncoder.encode(WebSocketFrame(opcode: .ping, payload: []), maskKey: [1, 2, 3, 4])
        let stream = Array([[UInt8]](repeating: frame, count: 500).joined())
        let parsed = Recorder<Int>()
        DispatchQueue.concurrentPerform(iterations: 4) { _ in
            var parser = WebSocketFrameParser(maxFrameSize: 1 << 20, requiresMask: true)
            let frames = (try? parseFramesLendingWhole([stream], parser: &parser)) ?? []
            let empty = frames.filter { $0.opcode == .ping && $0.payload.isEmpty }.count
            parsed.record(empty)
        }
        #expect(parsed.all == [500, 500, 500, 500])
    }

    /// A frame not all there is not lent, and nothing of it is consumed.
    @Test func aFrameNotAllThereIsNotLent() throws {
        let wire = WebSocketFrameEncoder.encode(WebSocketFrame(opcode: .text, payload: Array("Hello".utf8)), maskKey: mask)
        for end in 0..<wire.count {
            var parser = WebSocketFrameParser(maxFrameSize: 1 << 20)
            let lent = try Array(wire[..<end]).withUnsafeBytes { bytes in
                try Result { () throws(WebSocketViolation) in try parser.parseWhole(bytes) }.get()
            }
            #expect(lent == nil, "\(end) of \(wire.count) bytes")
        }
        var parser = WebSocketFrameParser(maxFrameSize: 1 << 20)
        let lent = try (wire + [0x81]).withUnsafeBytes { bytes in  // and the first byte of the next frame
            try Result { () throws(WebSocketViolation) in
                try parser.parseWhole(bytes).map { ($0.head.frame(unmasking: $0.payload), $0.consumed) }
            }.get()
        }
        #expect(lent?.1 == wire.count)
        #expect(lent?.0 == WebSocketFrame(opcode: .text, payload: Array("Hello".utf8)))
    }

    @Test func parsesFramesFedOneByteAtATime() throws {
        let small = sample.filter { $0.payload.count < 1000 }
        var wire: [UInt8] = []
        for frame in small { WebSocketFrameEncoder.append(frame, into: &wire, maskKey: mask) }
        var parser = WebSocketFrameParser(maxFrameSize: 1 << 20)
        #expect(try parseFrames(wire.map { [$0] }, parser: &parser) == small)
    }

    @Test func parsesUnmaskedServerFramesWhenMaskIsNotRequired() throws {
        var parser = WebSocketFrameParser(maxFrameSize: 1 << 20, requiresMask: false)
        var wire: [UInt8] = []
        for frame in sample { WebSocketFrameEncoder.append(frame, into: &wire) }
        #expect(try parseFrames([wire], parser: &parser) == sample)
    }

    @Test func closePayloadCutsTheReasonOnACharacterBoundary() {
        let payload = WebSocketFrameEncoder.closePayload(code: .goingAway, reason: String(repeating: "é", count: 100))
        #expect(payload.count == 2 + 122)
        #expect(Array(payload[..<2]) == [0x03, 0xE9])
        #expect(WebSocketFrameEncoder.closePayload(code: nil, reason: "ignored").isEmpty)
    }

    // MARK: Rules

    /// The rule `bytes` break, read piece by piece; the same rule must be found when the frame is lent whole.
    func violation(_ bytes: [UInt8], maxFrameSize: Int = 1 << 20, allowsRSV1: Bool = false) -> WebSocketViolation? {
        func found(lendingWhole: Bool) -> WebSocketViolation? {
            var parser = WebSocketFrameParser(maxFrameSize: maxFrameSize, allowsRSV1: allowsRSV1)
            do {
                _ = lendingWhole ? try parseFramesLendingWhole([bytes], parser: &parser) : try parseFrames([bytes], parser: &parser)
                return nil
            } catch {
                return error
            }
        }
        let pieceByPiece = found(lendingWhole: false)
        #expect(found(lendingWhole: true)?.code == pieceByPiece?.code, "lent whole and piece by piece disagree")
        return pieceByPiece
    }

    @Test func unmaskedClientFrameIsAProtocolError() {
        #expect(violation([0x81, 0x02, 0x48, 0x69])?.code == .protocolError)
    }

    @Test func reservedBitsAreAProtocolError() {
        #expect(violation([0xC1, 0x80] + mask)?.code == .protocolError)  // RSV1 without deflate
        #expect(violation([0xA1, 0x80] + mask)?.code == .protocolError)  // RSV2
        #expect(violation([0x91, 0x80] + mask)?.code == .protocolError)  // RSV3
        #expect(violation([0xC1, 0x80] + mask, allowsRSV1: true) == nil)
        #expect(violation([0xC9, 0x80] + mask, allowsRSV1: true)?.code == .protocolError)  // RSV1 on a ping
    }

    @Test func undefinedOpcodesAreAProtocolError() {
        for opcode: UInt8 in [0x3, 0x4, 0x5, 0x6, 0x7, 0xB, 0xC, 0xD, 0xE, 0xF] {
            #expect(violation([0x80 | opcode, 0x80] + mask)?.code == .protocolError, "opcode \(opcode)")
        }
    }

    @Test func fragmentedControlFrameIsAProtocolError() {
        #expect(violation([0x09, 0x80] + mask)?.code == .protocolError)
    }

    @Test func controlFrameOver125BytesIsAProtocolError() {
        #expect(violation([0x89, 0xFE, 0x00, 0x7E] + mask + [UInt8](repeating: 0, count: 126))?.code == .protocolError)
        #expect(violation([0x89, 0xFD] + mask + [UInt8](repeating: 0, count: 125)) == nil)
    }

    @Test func lengthWithMostSignificantBitIsAProtocolError() {
        #expect(violation([0x82, 0xFF, 0x80, 0, 0, 0, 0, 0, 0, 1] + mask)?.code == .protocolError)
    }

    @Test func frameOverTheLimitIsTooBig() {
        // Refused from the header alone: the 2^40-byte payload is never awaited.
        #expect(violation([0x82, 0xFF, 0, 0, 0x01, 0, 0, 0, 0, 0] + mask)?.code == .messageTooBig)
        #expect(violation([0x82, 0xFE, 0x01, 0x00] + mask, maxFrameSize: 255)?.code == .messageTooBig)
    }

    /// The word-at-a-time unmasking equals the byte-by-byte definition at every start offset and length.
    @Test func unmaskingEqualsTheBytewiseDefinitionAtEveryOffset() {
        let key: (UInt8, UInt8, UInt8, UInt8) = (0x12, 0x9A, 0x00, 0xFF)
        let keyBytes: [UInt8] = [0x12, 0x9A, 0x00, 0xFF]
        let original = (0..<64).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
        for start in 0..<12 {
            for count in 0...(64 - start) {
                var fast = original
                fast.withUnsafeMutableBytes { WebSocketFrameParser.unmask($0, from: start, count: count, key: key) }
                var slow = original
                for index in start..<(start + count) { slow[index] ^= keyBytes[index & 3] }
                #expect(fast == slow, "start \(start), count \(count)")
            }
        }
    }

    /// Unmasking while copying equals the byte-by-byte definition at every key phase and length, and
    /// tells whether the unmasked bytes are all ASCII.
    @Test func unmaskingCopyEqualsTheBytewiseDefinitionAndNotesASCII() {
        let key: (UInt8, UInt8, UInt8, UInt8) = (0x12, 0x9A, 0x00, 0xFF)
        let keyBytes: [UInt8] = [0x12, 0x9A, 0x00, 0xFF]
        for phase in 0..<4 {
            for count in 0...100 {
                for highByteAt in [nil] + Array(0..<count).map(Optional.some) {
                    var plain = (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) & 0x7F }
                    if let highByteAt { plain[highByteAt] = 0xC3 }
                    let masked = plain.indices.map { plain[$0] ^ keyBytes[(phase + $0) & 3] }
                    var copy = [UInt8](repeating: 0xEE, count: count + 1)
                    let isASCII = masked.withUnsafeBytes { source in
                        copy.withUnsafeMutableBytes { WebSocketFrameParser.unmask(source, into: $0.baseAddress!, key: key, phase: phase) }
                    }
                    #expect(Array(copy[..<count]) == plain, "phase \(phase), count \(count)")
                    #expect(copy[count] == 0xEE, "wrote past the end: phase \(phase), count \(count)")
                    #expect(isASCII == (highByteAt == nil), "phase \(phase), count \(count), high byte at \(String(describing: highByteAt))")
                }
            }
        }
    }
}
