import Testing
@testable import LoopKitHTTP

@Suite("Keep-alive and Connection: close")
struct KeepAliveTests {
    @Test func http11ConnectionServesSeveralRequests() async throws {
        try await withServer { _, port in
            let client = try RawClient(port: port)
            for _ in 0..<3 {
                let response = try client.exchange("GET /hello HTTP/1.1\r\nHost: t\r\n\r\n")
                #expect(response.status == 200)
                #expect(response.text == "Hello, World!")
                #expect(response.field("Connection") == nil)
            }
        }
    }

    @Test func serverSetsDateAndContentLength() async throws {
        try await withServer { _, port in
            let response = try RawClient(port: port).exchange("GET /hello HTTP/1.1\r\nHost: t\r\n\r\n")
            #expect(response.field("Content-Length") == "13")
            #expect(response.field("Date")?.hasSuffix(" GMT") == true)
        }
    }

    @Test func connectionCloseIsAnsweredThenClosed() async throws {
        try await withServer { _, port in
            let client = try RawClient(port: port)
            let response = try client.exchange("GET /hello HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
            #expect(response.status == 200)
            #expect(response.field("Connection") == "close")
            #expect(client.isClosedByServer())
        }
    }

    @Test func http10ClientIsAnsweredThenClosed() async throws {
        try await withServer { _, port in
            let client = try RawClient(port: port)
            let response = try client.exchange("GET /hello HTTP/1.0\r\n\r\n")
            #expect(response.status == 200)
            #expect(response.text == "Hello, World!")
            #expect(client.isClosedByServer())
        }
    }

    @Test func http10KeepAliveIsHonoured() async throws {
        try await withServer { _, port in
            let client = try RawClient(port: port)
            let first = try client.exchange("GET /hello HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
            #expect(first.field("Connection") == "keep-alive")
            #expect(try client.exchange("GET /hello HTTP/1.0\r\n\r\n").status == 200)
            #expect(client.isClosedByServer())
        }
    }

    @Test func idleKeepAliveConnectionIsClosedAfterItsTimeout() async throws {
        try await withServer(configure: { $0.idleTimeout = .milliseconds(100) }) { _, port in
            let client = try RawClient(port: port)
            #expect(try client.exchange("GET /hello HTTP/1.1\r\nHost: t\r\n\r\n").status == 200)
            #expect(client.readUntilClosed().isEmpty)  // closed without a response
        }
    }
}
