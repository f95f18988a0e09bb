import Testing
@testable import LoopKitHTTP

@Suite("Chunked bodies, both ways")
struct ChunkedBodyTests {
    @Test func chunkedRequestBodyIsCollected() async throws {
        try await withServer { _, port in
            let client = try RawClient(port: port)
            let response = try client.exchange("POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
                + "5\r\nhello\r\n1;ext=1\r\n \r\n5\r\nworld\r\n0\r\nTrailer: x\r\n\r\n")
            #expect(response.text == "hello world")
            #expect(response.field("Content-Length") == "11")
        }
    }

    @Test func streamedResponseIsChunked() async throws {
        try await withServer { _, port in
            let client = try RawClient(port: port)
            let response = try client.exchange("GET /stream?bytes=100000 HTTP/1.1\r\nHost: t\r\n\r\n")
            #expect(response.field("Transfer-Encoding") == "chunked")
            #expect(response.body.count == 100_000)
            #expect(try client.exchange("GET /hello HTTP/1.1\r\nHost: t\r\n\r\n").status == 200)  // still usable
        }
    }

    @Test func streamedResponseToHTTP10IsDelimitedByClose() async throws {
        try await withServer { _, port in
            let client = try RawClient(port: port)
            let response = try client.exchange("GET /stream?bytes=5000 HTTP/1.0\r\n\r\n")
            #expect(response.field("Transfer-Encoding") == nil)
            #expect(response.body.count == 5000)
        }
    }
}
