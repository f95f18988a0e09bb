import Testing
@testable import LoopKitHTTP

@Suite("Pipelining: answered in order")
struct PipeliningTests {
    @Test func pipelinedRequestsAreAnsweredInOrder() async throws {
        try await withServer { _, port in
            let client = try RawClient(port: port)
            client.send("GET /users/1 HTTP/1.1\r\nHost: t\r\n\r\nGET /async HTTP/1.1\r\nHost: t\r\n\r\n"
                + "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 4\r\n\r\necho"
                + "GET /users/2 HTTP/1.1\r\nHost: t\r\n\r\n")
            #expect(try client.readResponse().text == "user 1")
            #expect(try client.readResponse().text == "async on loop: true")
            #expect(try client.readResponse().text == "echo")
            #expect(try client.readResponse().text == "user 2")
        }
    }

    @Test func pipelinedRequestSplitAcrossWritesIsAnswered() async throws {
        try await withServer { _, port in
            let client = try RawClient(port: port)
            client.send("GET /users/1 HTTP/1.1\r\nHost: t\r\n\r\nGET /users/")
            #expect(try client.readResponse().text == "user 1")
            client.send("2 HTTP/1.1\r\nHost: t\r\n\r\n")
            #expect(try client.readResponse().text == "user 2")
        }
    }

    @Test func aBodyLargerThanOneReadArrivesWholeAndTheNextRequestAfterIt() async throws {
        // 200 KB: more than the loop's shared read buffer (64 KiB), so it arrives over several reads, and
        // the request behind it starts mid-read.
        try await withServer { _, port in
            let client = try RawClient(port: port)
            let body = (0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
            client.send(Array("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: \(body.count)\r\n\r\n".utf8) + body
                + Array("GET /users/3 HTTP/1.1\r\nHost: t\r\n\r\n".utf8))
            #expect(try client.readResponse().body == body)
            #expect(try client.readResponse().text == "user 3")
        }
    }

    @Test func requestAfterConnectionCloseIsNotAnswered() async throws {
        try await withServer { _, port in
            let client = try RawClient(port: port)
            client.send("GET /users/1 HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\nGET /users/2 HTTP/1.1\r\nHost: t\r\n\r\n")
            #expect(try client.readResponse().text == "user 1")
            #expect(client.isClosedByServer())
        }
    }
}
