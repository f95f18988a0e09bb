import HTTPTypes
import Testing
@testable import LoopKitHTTP

@Suite("Request parser: request line, fields and framing (RFC 9112)")
struct RequestParserTests {
    @Test func getWithHostParsesIntoAnHTTPRequest() throws {
        let result = parse("GET /hello?x=1 HTTP/1.1\r\nHost: example.com\r\nUser-Agent: t\r\nX-Custom: a b \r\n\r\n")
        #expect(result.error == nil)
        let head = try #require(result.requests.first?.head)
        #expect(head.request.method == .get)
        #expect(head.request.path == "/hello?x=1")
        #expect(head.request.authority == "example.com")
        #expect(head.request.headerFields[.userAgent] == "t")
        #expect(head.request.headerFields[HTTPField.Name("x-custom")!] == "a b")
        #expect(head.version == .http1_1)
        #expect(head.keepAlive)
        #expect(head.framing == .none)
    }

    @Test("the path is the target up to its first `?`, in origin and absolute form, and with no query")
    func thePathEndsAtTheFirstQuestionMark() throws {
        let heads = try ["GET /a/b?x=?y HTTP/1.1\r\nHost: h\r\n\r\n", "GET http://h/p?q HTTP/1.1\r\nHost: h\r\n\r\n",
                         "GET /plain HTTP/1.1\r\nHost: h\r\n\r\n", "GET /? HTTP/1.1\r\nHost: h\r\n\r\n"].map { text in
            try #require(parse(text).requests.first?.head)
        }
        #expect(heads.map { String($0.path) } == ["/a/b", "/p", "/plain", "/"])
        var built = heads[0]
        built.request.path = "/c?d"  // a head set by a caller: no mark from the parser, searched for
        #expect(built.path == "/c")
    }

    @Test func unknownMethodIsKept() {
        let result = parse("PURGE / HTTP/1.1\r\nHost: h\r\n\r\n")
        #expect(result.requests.first?.head.request.method.rawValue == "PURGE")
    }

    @Test func leadingEmptyLinesAreIgnored() {
        let result = parse("\r\n\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\n")
        #expect(result.requests.count == 1)
    }

    @Test func http11KeepsAliveByDefault() {
        #expect(parse("GET / HTTP/1.1\r\nHost: h\r\n\r\n").requests.first?.head.keepAlive == true)
    }

    @Test func connectionCloseEndsKeepAlive() {
        #expect(parse("GET / HTTP/1.1\r\nHost: h\r\nConnection: Close\r\n\r\n").requests.first?.head.keepAlive == false)
    }

    @Test func http10ClosesUnlessKeepAliveIsAsked() {
        #expect(parse("GET / HTTP/1.0\r\n\r\n").requests.first?.head.keepAlive == false)
        #expect(parse("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n").requests.first?.head.keepAlive == true)
    }

    @Test func http10NeedsNoHost() {
        #expect(parse("GET / HTTP/1.0\r\n\r\n").requests.first?.head.version == .http1_0)
    }

    @Test func higherMinorVersionIsAnsweredAsHTTP11() {
        #expect(parse("GET / HTTP/1.7\r\nHost: h\r\n\r\n").requests.first?.head.version == .http1_1)
    }

    @Test func expectContinueIsReported() {
        let head = parse("POST / HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\nab").requests.first?.head
        #expect(head?.expectsContinue == true)
    }

    @Test func contentLengthBodyIsDelivered() {
        let result = parse("POST /echo HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhello")
        #expect(result.requests.first?.body == Array("hello".utf8))
        #expect(result.requests.first?.head.framing == .length(5))
    }

    @Test func pipelinedRequestsComeOutInOrder() {
        let result = parse("GET /a HTTP/1.1\r\nHost: h\r\n\r\nPOST /b HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\n\r\nxGET /c HTTP/1.1\r\nHost: h\r\n\r\n")
        #expect(result.requests.map { $0.head.request.path } == ["/a", "/b", "/c"])
    }

    @Test func incompleteHeadWaitsForMoreBytes() {
        let result = parse("GET / HTTP/1.1\r\nHost: h\r\n")
        #expect(result.error == nil && result.requests.isEmpty && result.leftover > 0)
    }

    // MARK: Refused: request line

    @Test func malformedRequestLineIs400() {
        #expect(parseError("GET /\r\nHost: h\r\n\r\n") == .malformedRequestLine)
        #expect(parseError("GET  / HTTP/1.1\r\nHost: h\r\n\r\n") == .invalidTarget)
        #expect(HTTPRequestError.malformedRequestLine.status == .badRequest)
    }

    @Test func invalidCharacterInMethodIs400() {
        #expect(parseError("G(T / HTTP/1.1\r\nHost: h\r\n\r\n") == .invalidMethod)
    }

    @Test func invalidCharacterInTargetIs400() {
        #expect(parseError("GET /a\u{7F}b HTTP/1.1\r\nHost: h\r\n\r\n") == .invalidTarget)
        #expect(parse(Array("GET /\u{01} HTTP/1.1\r\nHost: h\r\n\r\n".utf8)).error == .invalidTarget)
    }

    @Test func malformedVersionIs400() {
        #expect(parseError("GET / HTTQ/1.1\r\nHost: h\r\n\r\n") == .malformedVersion)
        #expect(parseError("GET / HTTP/1.10\r\nHost: h\r\n\r\n") == .malformedVersion)
    }

    @Test func otherMajorVersionIs505() {
        let error = parseError("GET / HTTP/2.0\r\nHost: h\r\n\r\n")
        #expect(error == .unsupportedVersion(major: 2, minor: 0))
        #expect(error?.status == .httpVersionNotSupported)
    }

    @Test func bareLineFeedIs400() {
        #expect(parseError("GET / HTTP/1.1\nHost: h\n\n") == .invalidLineEnding)
        #expect(parseError("GET / HTTP/1.1\r\nHost: h\n\r\n") == .invalidLineEnding)
    }

    @Test func bareCarriageReturnInAFieldIs400() {
        #expect(parseError("GET / HTTP/1.1\r\nHost: h\rX: y\r\n\r\n") == .invalidFieldValue)
    }

    // MARK: Refused: fields

    @Test func obsoleteLineFoldingIs400() {
        #expect(parseError("GET / HTTP/1.1\r\nHost: h\r\nX-A: one\r\n two\r\n\r\n") == .obsoleteLineFolding)
    }

    @Test func whitespaceBeforeTheColonIs400() {
        #expect(parseError("GET / HTTP/1.1\r\nHost : h\r\n\r\n") == .invalidFieldName)
    }

    @Test func invalidCharacterInFieldNameIs400() {
        #expect(parseError("GET / HTTP/1.1\r\nHost: h\r\nX(Y): z\r\n\r\n") == .invalidFieldName)
        #expect(parseError("GET / HTTP/1.1\r\nHost: h\r\n: z\r\n\r\n") == .invalidFieldName)
    }

    @Test func fieldLineWithoutColonIs400() {
        #expect(parseError("GET / HTTP/1.1\r\nHost: h\r\nNoColon\r\n\r\n") == .missingColon)
    }

    @Test func controlCharacterInFieldValueIs400() {
        #expect(parse(Array("GET / HTTP/1.1\r\nHost: h\r\nX: a\u{00}b\r\n\r\n".utf8)).error == .invalidFieldValue)
    }

    @Test func http11WithoutHostIs400() {
        #expect(parseError("GET / HTTP/1.1\r\n\r\n") == .missingHost)
    }

    @Test func twoHostFieldsAre400() {
        #expect(parseError("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n") == .multipleHosts)
    }

    // MARK: Refused: framing (request smuggling)

    @Test func transferEncodingAndContentLengthAre400() {
        #expect(parseError("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n") == .transferEncodingWithContentLength)
        #expect(parseError("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n") == .transferEncodingWithContentLength)
    }

    @Test func transferEncodingNotEndingInChunkedIs400() {
        #expect(parseError("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked, gzip\r\n\r\n") == .chunkedNotLast)
        #expect(parseError("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: xchunked\r\n\r\n") == .chunkedNotLast)
        #expect(parseError("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: identity\r\n\r\n") == .chunkedNotLast)
    }

    @Test func chunkedAppliedTwiceIs400() {
        #expect(parseError("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked, chunked\r\n\r\n") == .chunkedNotLast)
    }

    @Test func otherTransferCodingBeforeChunkedIs501() {
        let error = parseError("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip, chunked\r\n\r\n")
        #expect(error == .unsupportedTransferCoding)
        #expect(error?.status == .notImplemented)
    }

    @Test func transferEncodingInHTTP10Is400() {
        #expect(parseError("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n") == .transferEncodingInHTTP10)
    }

    @Test func transferEncodingIsCaseInsensitive() {
        #expect(parse("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: Chunked\r\n\r\n0\r\n\r\n").requests.first?.head.framing == .chunked)
    }

    @Test func repeatedContentLengthIs400() {
        #expect(parseError("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\nabc") == .multipleContentLengths)
    }

    @Test func listOfContentLengthsIs400() {
        #expect(parseError("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 3, 3\r\n\r\nabc") == .multipleContentLengths)
    }

    @Test func malformedContentLengthIs400() {
        #expect(parseError("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: +3\r\n\r\nabc") == .invalidContentLength)
        #expect(parseError("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 0x3\r\n\r\nabc") == .invalidContentLength)
        #expect(parseError("POST / HTTP/1.1\r\nHost: h\r\nContent-Length:\r\n\r\n") == .invalidContentLength)
        #expect(parseError("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 99999999999999999999999\r\n\r\n") == .invalidContentLength)
    }
}
