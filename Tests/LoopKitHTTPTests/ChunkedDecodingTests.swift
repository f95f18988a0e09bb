import Testing
@testable import LoopKitHTTP

@Suite("Request parser: chunked bodies")
struct ChunkedDecodingTests {
    let head = "POST /echo HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"

    @Test func chunksAreDecodedInOrder() {
        let result = parse(head + "5\r\nhello\r\n7\r\n, world\r\n0\r\n\r\n")
        #expect(result.requests.first?.body == Array("hello, world".utf8))
        #expect(result.leftover == 0)
    }

    @Test func hexSizesInEitherCaseAreRead() {
        let body = String(repeating: "x", count: 26)
        #expect(parse(head + "1A\r\n\(body)\r\n0\r\n\r\n").requests.first?.body.count == 26)
        #expect(parse(head + "1a\r\n\(body)\r\n0\r\n\r\n").requests.first?.body.count == 26)
    }

    @Test func chunkExtensionsAreIgnored() {
        #expect(parse(head + "3;name=value\r\nabc\r\n0\r\n\r\n").requests.first?.body == Array("abc".utf8))
    }

    @Test func trailersAreReadAndDropped() {
        let result = parse(head + "3\r\nabc\r\n0\r\nX-Trailer: yes\r\n\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\n")
        #expect(result.requests.count == 2)
        #expect(result.requests.first?.body == Array("abc".utf8))
    }

    @Test func nonHexChunkSizeIs400() {
        #expect(parse(head + "zz\r\nabc\r\n0\r\n\r\n").error == .invalidChunkSize)
    }

    @Test func emptyChunkSizeIs400() {
        #expect(parse(head + "\r\nabc\r\n0\r\n\r\n").error == .invalidChunkSize)
    }

    @Test func signedChunkSizeIs400() {
        #expect(parse(head + "-3\r\nabc\r\n0\r\n\r\n").error == .invalidChunkSize)
    }

    @Test func chunkSizeWithTrailingGarbageIs400() {
        #expect(parse(head + "3 x\r\nabc\r\n0\r\n\r\n").error == .invalidChunkSize)
    }

    @Test func overflowingChunkSizeIs413() {
        let error = parse(head + "ffffffffffffffffff\r\nabc\r\n").error
        #expect(error == .bodyTooLarge)
    }

    @Test func chunkDataNotFollowedByCRLFIs400() {
        #expect(parse(head + "3\r\nabcd\r\n0\r\n\r\n").error == .invalidChunkTerminator)
    }

    @Test func chunkSizeLineWithBareLFIs400() {
        #expect(parse(head + "3\nabc\r\n0\r\n\r\n").error == .invalidLineEnding)
    }

    @Test func overLongChunkSizeLineIs400() {
        let extensions = ";" + String(repeating: "e", count: 2000)
        #expect(parse(head + "3\(extensions)\r\nabc\r\n0\r\n\r\n").error == .invalidChunkSize)
    }

    @Test func chunkedBodyOverTheLimitIs413() {
        var limits = HTTPParserLimits()
        limits.maxBodySize = 4
        let result = parse(head + "3\r\nabc\r\n3\r\ndef\r\n0\r\n\r\n", limits: limits)
        #expect(result.error == .bodyTooLarge)
        #expect(result.error?.status == .contentTooLarge)
    }
}
