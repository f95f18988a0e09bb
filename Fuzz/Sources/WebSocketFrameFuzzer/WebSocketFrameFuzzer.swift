import FuzzSupport
@testable import LoopKitHTTP

/// The WebSocket frame parser, the message assembler and permessage-deflate over arbitrary bytes.
///
/// The first byte picks the parser's settings (bit 0: frames must be masked, as on a server; bit 1: RSV1
/// allowed, as with permessage-deflate); the rest are frames. Checked:
/// - parsed whole, byte by byte and in pseudo-random pieces, the same frames and the same violation;
/// - each frame the parser lends in place (`parseWhole`) is the frame `parse` reads;
/// - data frames assembled from whole frames and from lent frames (the connection's fast path) give the
///   same messages and a violation with the same close code;
/// - each parsed frame, encoded again, parses back to itself;
/// - each data payload compressed and inflated again is itself, with and without context takeover;
/// - each payload inflated as if compressed never exceeds the limit (a violation, not a crash).
@_cdecl("LLVMFuzzerTestOneInput")
public func webSocketFrameFuzzer(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard size >= 1, let data else { return 0 }
    let settings = data[0]
    let bytes = UnsafeRawBufferPointer(start: data + 1, count: size - 1)
    let requiresMask = settings & 1 != 0
    let allowsRSV1 = settings & 2 != 0
    let maxFrameSize = 512
    var generator = SplitMix(hashing: bytes)

    let whole = frames(bytes, cuts: [], requiresMask: requiresMask, allowsRSV1: allowsRSV1, maxFrameSize: maxFrameSize)
    let byByte = frames(bytes, cuts: bytes.count > 1 ? Array(1..<bytes.count) : [], requiresMask: requiresMask,
                        allowsRSV1: allowsRSV1, maxFrameSize: maxFrameSize)
    fuzzCheck(byByte == whole, "byte by byte: \(byByte) whole: \(whole)")
    let cuts = randomCuts(count: bytes.count, using: &generator)
    let split = frames(bytes, cuts: cuts, requiresMask: requiresMask, allowsRSV1: allowsRSV1, maxFrameSize: maxFrameSize)
    fuzzCheck(split == whole, "cuts \(cuts): \(split) whole: \(whole)")

    checkLentFrames(bytes, whole: whole, requiresMask: requiresMask, allowsRSV1: allowsRSV1, maxFrameSize: maxFrameSize)
    checkReencoding(whole.frames, requiresMask: requiresMask, allowsRSV1: allowsRSV1, maxFrameSize: maxFrameSize)
    checkDeflateRoundTrip(whole.frames.map(\.payload) + [Array(bytes)])
    checkInflateLimit(bytes)
    return 0
}

/// The frames of a byte stream delivered in pieces, and the violation that ended it.
struct FrameResult: Equatable {
    var frames: [WebSocketFrame] = []
    var violation: WebSocketViolation?
    var leftover = 0
}

func frames(_ bytes: UnsafeRawBufferPointer, cuts: [Int], requiresMask: Bool, allowsRSV1: Bool, maxFrameSize: Int) -> FrameResult {
    var parser = WebSocketFrameParser(maxFrameSize: maxFrameSize, requiresMask: requiresMask, allowsRSV1: allowsRSV1)
    var result = FrameResult()
    var bounds = cuts.filter { $0 > 0 && $0 < bytes.count }
    bounds.append(bytes.count)
    var start = 0
    for end in bounds where end > start {
        var piece = UnsafeRawBufferPointer(rebasing: bytes[start..<end])
        start = end
        while !piece.isEmpty {
            let step: (event: WebSocketFrameParser.Event, consumed: Int)
            do throws(WebSocketViolation) {
                step = try parser.parse(piece)
            } catch {
                result.violation = error
                return result
            }
            fuzzCheck(step.consumed >= 0 && step.consumed <= piece.count, "consumed \(step.consumed) of \(piece.count)")
            piece = UnsafeRawBufferPointer(rebasing: piece[step.consumed...])
            switch step.event {
            case .needMoreBytes:
                fuzzCheck(piece.isEmpty, "needMoreBytes left \(piece.count) bytes")
            case .frame(let frame):
                fuzzCheck(frame.payload.count <= maxFrameSize, "a frame over maxFrameSize")
                fuzzCheck(!frame.opcode.isControl || (frame.fin && frame.payload.count <= 125 && !frame.rsv1),
                          "an invalid control frame passed: \(frame)")
                fuzzCheck(allowsRSV1 || !frame.rsv1, "RSV1 passed without permessage-deflate")
                result.frames.append(frame)
            }
        }
    }
    return result
}

/// `parseWhole` lends each frame that lies whole in the bytes; it must be the one `parse` read, and the
/// assembler's fast path over lent frames must agree with its path over whole frames.
func checkLentFrames(_ bytes: UnsafeRawBufferPointer, whole: FrameResult, requiresMask: Bool, allowsRSV1: Bool, maxFrameSize: Int) {
    var parser = WebSocketFrameParser(maxFrameSize: maxFrameSize, requiresMask: requiresMask, allowsRSV1: allowsRSV1)
    var viaFrames = WebSocketMessageAssembler(maxMessageSize: 1024)
    var viaLent = WebSocketMessageAssembler(maxMessageSize: 1024)
    // Each path its own permessage-deflate codec (an inflater keeps its context from message to message).
    func deflate() -> WebSocketNegotiatedExtension? {
        guard allowsRSV1 else { return nil }
        return .perMessageDeflate(PerMessageDeflate.Codec(deflater: WebSocketDeflater(windowBits: 15, noContextTakeover: false),
                                                          inflater: WebSocketInflater(noContextTakeover: false)))
    }
    let framesExtension = deflate(), lentExtension = deflate()
    var rest = bytes
    var index = 0
    while true {
        let lent: WebSocketFrameParser.WholeFrame?
        do throws(WebSocketViolation) {
            lent = try parser.parseWhole(rest)
        } catch {
            fuzzCheck(index == whole.frames.count && whole.violation == error,
                      "parseWhole threw \(error) at frame \(index); parse: \(whole)")
            return
        }
        guard let lent else {
            fuzzCheck(index == whole.frames.count, "parseWhole stopped at frame \(index) of \(whole.frames.count)")
            return
        }
        fuzzCheck(index < whole.frames.count, "parseWhole lent a frame parse did not read")
        let frame = lent.head.frame(unmasking: lent.payload)
        fuzzCheck(frame == whole.frames[index], "lent \(frame), parsed \(whole.frames[index])")
        if frame.opcode == .continuation || frame.opcode == .text || frame.opcode == .binary {
            let fromFrame = Result { () throws(WebSocketViolation) in try viaFrames.append(frame, extension: framesExtension) }
            let fromLent = Result { () throws(WebSocketViolation) in
                try viaLent.append(lent.head, maskedPayload: lent.payload, extension: lentExtension)
            }
            // The same message, or a violation with the same close code (the reason's words may differ).
            let agree = switch (fromFrame, fromLent) {
            case (.success(let message), .success(let lentMessage)): message == lentMessage
            case (.failure(let violation), .failure(let lentViolation)): violation.code == lentViolation.code
            default: false
            }
            fuzzCheck(agree, "assembled from frames \(fromFrame), from lent frames \(fromLent)")
            if case .failure = fromFrame { return }  // a violation ends the connection
        }
        rest = UnsafeRawBufferPointer(rebasing: rest[lent.consumed...])
        index += 1
    }
}

/// Each frame encoded again (masked when the parser requires it) parses back to itself.
func checkReencoding(_ parsed: [WebSocketFrame], requiresMask: Bool, allowsRSV1: Bool, maxFrameSize: Int) {
    for frame in parsed {
        let encoded = WebSocketFrameEncoder.encode(frame, maskKey: requiresMask ? [0x37, 0xFA, 0x21, 0x3D] : nil)
        let again = encoded.withUnsafeBytes {
            frames($0, cuts: [], requiresMask: requiresMask, allowsRSV1: allowsRSV1, maxFrameSize: maxFrameSize)
        }
        fuzzCheck(again == FrameResult(frames: [frame]), "\(frame) encoded and parsed again: \(again)")
    }
}

/// permessage-deflate: every payload compressed and inflated again is itself, message after message
/// (context takeover) and with a fresh context per message.
func checkDeflateRoundTrip(_ messages: [[UInt8]]) {
    for noContextTakeover in [false, true] {
        let deflater = WebSocketDeflater(windowBits: 15, noContextTakeover: noContextTakeover)
        let inflater = WebSocketInflater(noContextTakeover: noContextTakeover)
        for message in messages {
            let compressed = message.withUnsafeBytes { deflater.compress($0) }
            var output: [UInt8] = []
            do throws(WebSocketViolation) {
                try compressed.withUnsafeBytes { bytes in
                    Result { () throws(WebSocketViolation) in try inflater.inflate(bytes, into: &output, limit: 1 << 20) }
                }.get()
                try inflater.finishMessage(into: &output, limit: 1 << 20)
            } catch {
                fuzzCheck(false, "inflating what the deflater wrote failed: \(error); noContextTakeover \(noContextTakeover), message \(message), compressed \(compressed), messages \(messages)")
            }
            fuzzCheck(output == message, "deflate round trip of \(message.count) bytes gave \(output.count)")
        }
    }
}

/// Arbitrary bytes inflated as a compressed message: a violation or at most `limit` bytes.
func checkInflateLimit(_ bytes: UnsafeRawBufferPointer) {
    let inflater = WebSocketInflater(noContextTakeover: false)
    var output: [UInt8] = []
    do throws(WebSocketViolation) {
        try inflater.inflate(bytes, into: &output, limit: 4096)
        try inflater.finishMessage(into: &output, limit: 4096)
    } catch {
        return
    }
    fuzzCheck(output.count <= 4096, "inflated \(output.count) bytes past the limit")
}
