import Testing
@testable import LoopKitHTTP

/// Inputs `make fuzz` found (Fuzz/RequestParserFuzzer), each kept as the rule it broke. Their bytes are
/// also in Fuzz/Corpus/RequestParserFuzzer/, which `make test` replays.
@Suite("Request parser: fuzz-found regressions")
struct ParserFuzzRegressionTests {
    /// Every way of delivering `bytes` gets `whole`'s result: byte by byte and every single cut.
    func expectSplitsAgree(_ bytes: [UInt8], limits: HTTPParserLimits, sourceLocation: SourceLocation = #_sourceLocation) {
        let whole = parse(bytes, limits: limits)
        #expect(parse(bytes, cuts: Array(1..<bytes.count), limits: limits) == whole, sourceLocation: sourceLocation)
        for cut in 1..<bytes.count {
            #expect(parse(bytes, cuts: [cut], limits: limits) == whole, "cut at \(cut)", sourceLocation: sourceLocation)
        }
    }

    /// crash-fb910f2e: a request line past the limit that ends in a bare LF was "bare LF" whole and "too
    /// long" when the LF had not arrived yet.
    @Test func requestLinePastTheLimitIsTooLongWhateverEndsIt() {
        let limits = HTTPParserLimits(maxRequestLineLength: 64)
        let bytes: [UInt8] = [0x0D, 0xE0, 0x1F, 0xE4] + Array(repeating: 0, count: 64) + [0x0A, 0x00]
        #expect(parse(bytes, limits: limits).error == .requestLineTooLong)
        expectSplitsAgree(bytes, limits: limits)
    }

    @Test func headPastTheLimitIsTooLargeWhateverEndsIt() {
        let limits = HTTPParserLimits(maxHeadSize: 64)
        let bytes = Array("GET / HTTP/1.1\r\nHost: h\r\nX: \(String(repeating: "v", count: 60))\n\r\n".utf8)
        #expect(parse(bytes, limits: limits).error == .headTooLarge)
        expectSplitsAgree(bytes, limits: limits)
    }

    @Test func trailerSectionPastTheLimitIsTooLargeWhateverEndsIt() {
        let limits = HTTPParserLimits(maxHeadSize: 64)
        let bytes = Array("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nT: \(String(repeating: "v", count: 70))\n\r\n".utf8)
        #expect(parse(bytes, limits: limits).error == .headTooLarge)
        expectSplitsAgree(bytes, limits: limits)
    }
}
