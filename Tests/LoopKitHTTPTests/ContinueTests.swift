import Testing
@testable import LoopKitHTTP

@Suite("Expect: 100-continue")
struct ContinueTests {
    @Test func continueIsSentBeforeTheBody() async throws {
        try await withServer { _, port in
            let client = try RawClient(port: port)
            client.send("POST /echo HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n")
            let interim = try client.readResponse()
            #expect(interim.status == 100)
            client.send("hello")
            let final = try client.readResponse()
            #expect(final.status == 200)
            #expect(final.text == "hello")
        }
    }

    @Test func bodyTooLargeIsRefusedWithoutContinue() async throws {
        try await withServer(configure: { $0.maxBodySize = 10 }) { _, port in
            let client = try RawClient(port: port)
            let response = try client.exchange("POST /echo HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 11\r\n\r\n")
            #expect(response.status == 413)
            #expect(client.isClosedByServer())
        }
    }
}
