import Testing
@testable import LoopKitHTTP

/// Every refused request over a real socket: the status, then the connection closed (nothing smuggled).
@Suite("Bad input: refused and closed")
struct BadInputTests {
    /// Sends `request` followed by a second, innocent request; expects `status` and a closed connection
    /// (the second request is never answered).
    func expectRefusal(_ request: String, status: Int, configure: @escaping (inout HTTPServer.Configuration) -> Void = { _ in }) async throws {
        try await withServer(configure: configure) { _, port in
            let client = try RawClient(port: port)
            client.send(request + "GET /hello HTTP/1.1\r\nHost: t\r\n\r\n")
            let response = try client.readResponse()
            #expect(response.status == status)
            #expect(response.field("Connection") == "close")
            #expect(client.isClosedByServer())
        }
    }

    @Test func transferEncodingWithContentLength() async throws {
        try await expectRefusal("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", status: 400)
    }

    @Test func transferEncodingWhoseLastCodingIsNotChunked() async throws {
        try await expectRefusal("POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked, identity\r\n\r\n", status: 400)
    }

    @Test func transferEncodingThatOnlyLooksChunked() async throws {
        try await expectRefusal("POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked-false\r\n\r\n", status: 400)
    }

    @Test func unsupportedTransferCodingBeforeChunked() async throws {
        try await expectRefusal("POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", status: 501)
    }

    @Test func repeatedContentLength() async throws {
        try await expectRefusal("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 4\r\nContent-Length: 4\r\n\r\nabcd", status: 400)
    }

    @Test func malformedContentLength() async throws {
        try await expectRefusal("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 4x\r\n\r\nabcd", status: 400)
    }

    @Test func obsoleteLineFolding() async throws {
        try await expectRefusal("GET /hello HTTP/1.1\r\nHost: t\r\nX-A: a\r\n\tb\r\n\r\n", status: 400)
    }

    @Test func invalidChunkSize() async throws {
        try await expectRefusal("POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n4g\r\nabcd\r\n0\r\n\r\n", status: 400)
    }

    @Test func invalidCharacterInTheRequestLine() async throws {
        try await expectRefusal("GET /he llo HTTP/1.1\r\nHost: t\r\n\r\n", status: 400)
    }

    @Test func invalidCharacterInAFieldName() async throws {
        try await expectRefusal("GET /hello HTTP/1.1\r\nHost: t\r\nBad[Name]: v\r\n\r\n", status: 400)
    }

    @Test func bareLineFeed() async throws {
        try await expectRefusal("GET /hello HTTP/1.1\nHost: t\n\n", status: 400)
    }

    @Test func missingHost() async throws {
        try await expectRefusal("GET /hello HTTP/1.1\r\n\r\n", status: 400)
    }

    @Test func unsupportedVersion() async throws {
        try await expectRefusal("GET /hello HTTP/3.0\r\nHost: t\r\n\r\n", status: 505)
    }

    @Test func randomGarbageNeverCrashesTheServer() async throws {
        // Garbage without a line end waits for the head timeout: keep it short.
        try await withServer(configure: { $0.headTimeout = .milliseconds(50) }) { _, port in
            var generator = SplitMix(seed: 7)
            for _ in 0..<50 {
                let client = try RawClient(port: port)
                client.send((0..<300).map { _ in UInt8.random(in: 0...255, using: &generator) })
                _ = client.readUntilClosed()
            }
            #expect(try RawClient(port: port).exchange("GET /hello HTTP/1.1\r\nHost: t\r\n\r\n").status == 200)
        }
    }
}
