import Testing
@testable import LoopKitHTTP

@Suite("Limits and timeouts over the wire")
struct LimitsAndTimeoutsTests {
    @Test func everyServerLimitHasASafeDefault() {
        let configuration = HTTPServer.Configuration()
        #expect(configuration.headTimeout == .seconds(10))
        #expect(configuration.bodyTimeout == .seconds(30))
        #expect(configuration.idleTimeout == .seconds(60))
        #expect(configuration.shutdownDeadline == .seconds(10))
        #expect(configuration.maxBodySize == 1024 * 1024)
    }

    @Test func overLongRequestLineIs431() async throws {
        try await withServer(configure: { $0.limits.maxRequestLineLength = 100 }) { _, port in
            let client = try RawClient(port: port)
            let response = try client.exchange("GET /\(String(repeating: "a", count: 200)) HTTP/1.1\r\nHost: t\r\n\r\n")
            #expect(response.status == 431)
            #expect(client.isClosedByServer())
        }
    }

    @Test func overLargeHeadIs431() async throws {
        try await withServer(configure: { $0.limits.maxHeadSize = 512 }) { _, port in
            let client = try RawClient(port: port)
            let fields = (0..<40).map { "X-F\($0): \(String(repeating: "v", count: 30))\r\n" }.joined()
            let response = try client.exchange("GET /hello HTTP/1.1\r\nHost: t\r\n\(fields)\r\n")
            #expect(response.status == 431)
            #expect(client.isClosedByServer())
        }
    }

    @Test func tooManyFieldsIs431() async throws {
        try await withServer(configure: { $0.limits.maxFieldCount = 3 }) { _, port in
            let client = try RawClient(port: port)
            let response = try client.exchange("GET /hello HTTP/1.1\r\nHost: t\r\nA: 1\r\nB: 2\r\nC: 3\r\nD: 4\r\n\r\n")
            #expect(response.status == 431)
        }
    }

    @Test func bodyOverTheLimitIs413() async throws {
        try await withServer(configure: { $0.maxBodySize = 16 }) { _, port in
            let client = try RawClient(port: port)
            let response = try client.exchange("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 17\r\n\r\n01234567890123456")
            #expect(response.status == 413)
            #expect(client.isClosedByServer())
        }
    }

    @Test func chunkedBodyOverTheLimitIs413() async throws {
        try await withServer(configure: { $0.maxBodySize = 16 }) { _, port in
            let client = try RawClient(port: port)
            let response = try client.exchange("POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n10\r\n0123456789abcdef\r\n1\r\nx\r\n")
            #expect(response.status == 413)
        }
    }

    @Test func slowHeadIsAnswered408AndClosed() async throws {
        try await withServer(configure: { $0.headTimeout = .milliseconds(100) }) { _, port in
            let client = try RawClient(port: port)
            client.send("GET /hello HTTP/1.1\r\nHost: t\r\n")  // never finishes the head
            let response = try client.readResponse()
            #expect(response.status == 408)
            #expect(client.isClosedByServer())
        }
    }

    @Test func slowBodyIsAnswered408AndClosed() async throws {
        try await withServer(configure: { $0.bodyTimeout = .milliseconds(100) }) { _, port in
            let client = try RawClient(port: port)
            client.send("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\nabc")
            let response = try client.readResponse()
            #expect(response.status == 408)
            #expect(client.isClosedByServer())
        }
    }

    @Test func silentConnectionIsClosedWithoutAResponse() async throws {
        try await withServer(configure: { $0.idleTimeout = .milliseconds(100) }) { _, port in
            let client = try RawClient(port: port)
            #expect(client.readUntilClosed().isEmpty)
        }
    }
}
