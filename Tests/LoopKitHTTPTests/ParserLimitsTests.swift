import Testing
@testable import LoopKitHTTP

@Suite("Request parser: limits")
struct ParserLimitsTests {
    @Test func everyLimitHasASafeDefault() {
        let limits = HTTPParserLimits()
        #expect(limits.maxRequestLineLength == 8 * 1024)
        #expect(limits.maxHeadSize == 16 * 1024)
        #expect(limits.maxFieldCount == 100)
        #expect(limits.maxBodySize == 1024 * 1024)
    }

    @Test func overLongRequestLineIs431() {
        let limits = HTTPParserLimits(maxRequestLineLength: 64)
        let error = parseError("GET /\(String(repeating: "a", count: 100)) HTTP/1.1\r\nHost: h\r\n\r\n", limits: limits)
        #expect(error == .requestLineTooLong)
        #expect(error?.status == .requestHeaderFieldsTooLarge)
    }

    @Test func overLongRequestLineIsRefusedBeforeItEnds() {
        let limits = HTTPParserLimits(maxRequestLineLength: 64)
        #expect(parseError("GET /\(String(repeating: "a", count: 100))", limits: limits) == .requestLineTooLong)
    }

    @Test func overLargeHeadIs431() {
        let limits = HTTPParserLimits(maxHeadSize: 256)
        let fields = (0..<20).map { "X-Field-\($0): \(String(repeating: "v", count: 20))\r\n" }.joined()
        let error = parseError("GET / HTTP/1.1\r\nHost: h\r\n\(fields)\r\n", limits: limits)
        #expect(error == .headTooLarge)
        #expect(error?.status == .requestHeaderFieldsTooLarge)
    }

    @Test func overLargeHeadIsRefusedBeforeItEnds() {
        let limits = HTTPParserLimits(maxHeadSize: 256)
        let fields = (0..<20).map { "X-Field-\($0): \(String(repeating: "v", count: 20))\r\n" }.joined()
        #expect(parseError("GET / HTTP/1.1\r\nHost: h\r\n\(fields)", limits: limits) == .headTooLarge)
    }

    @Test func tooManyFieldsIs431() {
        let limits = HTTPParserLimits(maxFieldCount: 5)
        let fields = (0..<5).map { "X-\($0): v\r\n" }.joined()
        let error = parseError("GET / HTTP/1.1\r\nHost: h\r\n\(fields)\r\n", limits: limits)
        #expect(error == .tooManyFields)
        #expect(error?.status == .requestHeaderFieldsTooLarge)
    }

    @Test func contentLengthOverTheLimitIs413BeforeTheBody() {
        let limits = HTTPParserLimits(maxBodySize: 10)
        let error = parseError("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 11\r\n\r\n", limits: limits)
        #expect(error == .bodyTooLarge)
        #expect(error?.status == .contentTooLarge)
    }

    @Test func bodyAtTheLimitIsAccepted() {
        let limits = HTTPParserLimits(maxBodySize: 10)
        #expect(parse("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 10\r\n\r\n0123456789", limits: limits).requests.count == 1)
    }

    @Test func overLargeTrailerSectionIs431() {
        let limits = HTTPParserLimits(maxHeadSize: 128)
        let trailer = "X-T: \(String(repeating: "t", count: 200))\r\n"
        let error = parseError("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\(trailer)\r\n", limits: limits)
        #expect(error == .headTooLarge)
    }
}
