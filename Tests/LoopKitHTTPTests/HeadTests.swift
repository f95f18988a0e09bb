import Testing
@testable import LoopKitHTTP

@Suite("HEAD: fields without a body")
struct HeadTests {
    @Test func headGetsTheLengthButNoBody() async throws {
        try await withServer { _, port in
            let client = try RawClient(port: port)
            let response = try client.exchange("HEAD /hello HTTP/1.1\r\nHost: t\r\n\r\n", bodyless: true)
            #expect(response.status == 200)
            #expect(response.field("Content-Length") == "13")
            // Had a body been sent, this would read it as the next status line.
            #expect(try client.exchange("GET /users/3 HTTP/1.1\r\nHost: t\r\n\r\n").text == "user 3")
        }
    }

    @Test func headOfAStreamSendsNoChunks() async throws {
        try await withServer { _, port in
            let client = try RawClient(port: port)
            let response = try client.exchange("HEAD /stream?bytes=1000 HTTP/1.1\r\nHost: t\r\n\r\n", bodyless: true)
            #expect(response.status == 200)
            #expect(try client.exchange("GET /users/4 HTTP/1.1\r\nHost: t\r\n\r\n").text == "user 4")
        }
    }
}
