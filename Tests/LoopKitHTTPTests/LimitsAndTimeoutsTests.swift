import HTTPTypes
import LoopKitHTTPTesting
import LoopKitNet
import Testing
@testable import LoopKitHTTP

/// Each wire test runs twice: in memory on a stepped loop (timeouts on virtual time) and live over a
/// socket (``HTTPTestClient``).
@Suite("Limits and timeouts over the wire")
struct LimitsAndTimeoutsTests {
    @Test func everyServerLimitHasASafeDefault() {
        let configuration = HTTPServer.Configuration()
        #expect(configuration.headTimeout == .seconds(10))
        #expect(configuration.defersAcceptUntilData)  // HTTP clients speak first
        #expect(configuration.bodyTimeout == .seconds(30))
        #expect(configuration.idleTimeout == .seconds(60))
        #expect(configuration.shutdownDeadline == .seconds(10))
        #expect(configuration.maxBodySize == 1024 * 1024)
    }

    func client(_ mode: HTTPTestMode, _ configure: (inout HTTPServer.Configuration) -> Void) throws -> HTTPTestClient {
        var configuration = HTTPServer.Configuration()
        configure(&configuration)
        return try HTTPTestClient(router: testRouter(), configuration: configuration, mode: mode)
    }

    /// Issue 43, item 3: in memory, the client was still sending when the server closed, its next write
    /// failed, and the 413 the server wrote before it closed was lost ("closed before a whole response").
    @Test("A body over the route's limit gets its 413 whatever its size, in memory as live",
          arguments: HTTPTestMode.allCases, [65_536, 100_000, 1_000_000])
    func overLimitBodyIs413AtAnySize(mode: HTTPTestMode, size: Int) throws {
        var router = HTTPRouter()
        router.on(.post, "/x", bodyLimit: 10) { _, _ in .text("never") }
        let client = try HTTPTestClient(router: router, mode: mode)
        let response = try client.execute(.post, "/x", body: Bytes([UInt8](repeating: UInt8(ascii: "a"), count: size)))
        #expect(response.status == .contentTooLarge)
    }

    @Test(arguments: HTTPTestMode.allCases)
    func overLongRequestLineIs431(mode: HTTPTestMode) throws {
        let client = try client(mode) { $0.limits.maxRequestLineLength = 100 }
        try client.send("GET /\(String(repeating: "a", count: 200)) HTTP/1.1\r\nHost: t\r\n\r\n")
        #expect(try client.nextResponse().status.code == 431)
        #expect(try client.readUntilClosed().isEmpty)
    }

    @Test(arguments: HTTPTestMode.allCases)
    func overLargeHeadIs431(mode: HTTPTestMode) throws {
        let client = try client(mode) { $0.limits.maxHeadSize = 512 }
        let fields = (0..<40).map { "X-F\($0): \(String(repeating: "v", count: 30))\r\n" }.joined()
        try client.send("GET /hello HTTP/1.1\r\nHost: t\r\n\(fields)\r\n")
        #expect(try client.nextResponse().status.code == 431)
        #expect(try client.readUntilClosed().isEmpty)
    }

    @Test(arguments: HTTPTestMode.allCases)
    func tooManyFieldsIs431(mode: HTTPTestMode) throws {
        let client = try client(mode) { $0.limits.maxFieldCount = 3 }
        try client.send("GET /hello HTTP/1.1\r\nHost: t\r\nA: 1\r\nB: 2\r\nC: 3\r\nD: 4\r\n\r\n")
        #expect(try client.nextResponse().status.code == 431)
    }

    @Test(arguments: HTTPTestMode.allCases)
    func bodyOverTheLimitIs413(mode: HTTPTestMode) throws {
        let client = try client(mode) { $0.maxBodySize = 16 }
        let response = try client.execute(.post, "/echo", body: Bytes("01234567890123456"))
        #expect(response.status == .contentTooLarge)
        #expect(try client.readUntilClosed().isEmpty)
    }

    @Test(arguments: HTTPTestMode.allCases)
    func chunkedBodyOverTheLimitIs413(mode: HTTPTestMode) throws {
        let client = try client(mode) { $0.maxBodySize = 16 }
        try client.send("POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n10\r\n0123456789abcdef\r\n1\r\nx\r\n")
        #expect(try client.nextResponse().status == .contentTooLarge)
    }

    @Test(arguments: HTTPTestMode.allCases)
    func slowHeadIsAnswered408AndClosed(mode: HTTPTestMode) throws {
        let client = try client(mode) { $0.headTimeout = .milliseconds(100) }
        try client.send("GET /hello HTTP/1.1\r\nHost: t\r\n")  // never finishes the head
        try client.advance(by: .milliseconds(150))
        #expect(try client.nextResponse().status == .requestTimeout)
        #expect(try client.readUntilClosed().isEmpty)
    }

    @Test(arguments: HTTPTestMode.allCases)
    func slowBodyIsAnswered408AndClosed(mode: HTTPTestMode) throws {
        let client = try client(mode) { $0.bodyTimeout = .milliseconds(100) }
        try client.send("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\nabc")
        try client.advance(by: .milliseconds(150))
        #expect(try client.nextResponse().status == .requestTimeout)
        #expect(try client.readUntilClosed().isEmpty)
    }

    /// Seen in the soak (a client that stalls mid-body on `/upload`): once a handler reads the body as a
    /// stream, the server has handed the request over, so a stalled body closes the connection without a 408.
    @Test(arguments: HTTPTestMode.allCases)
    func aStreamedBodyThatStallsIsClosedWithoutA408(mode: HTTPTestMode) throws {
        var router = HTTPRouter()
        router.on(.post, "/count", bodyLimit: nil) { _, body in
            var count = 0
            for try await chunk in body { count += chunk.count }
            return .text("received \(count)")
        }
        var configuration = HTTPServer.Configuration()
        configuration.bodyTimeout = .milliseconds(100)
        let client = try HTTPTestClient(router: router, configuration: configuration, mode: mode)
        try client.send("POST /count HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\nabc")
        try client.advance(by: .milliseconds(150))
        #expect(try client.readUntilClosed().isEmpty)
    }

    @Test(arguments: HTTPTestMode.allCases)
    func silentConnectionIsClosedWithoutAResponse(mode: HTTPTestMode) throws {
        let client = try client(mode) { $0.idleTimeout = .milliseconds(100) }
        try client.advance(by: .milliseconds(150))
        #expect(try client.readUntilClosed().isEmpty)
    }

    /// In memory, a head that is not finished is not answered until its timeout: the loop goes idle and
    /// the client says so, rather than hanging.
    @Test func anUnfinishedHeadWaitsForItsTimeoutInMemory() throws {
        let client = try client(.inMemory) { $0.headTimeout = .seconds(10) }
        try client.send("GET /hello HTTP/1.1\r\nHost: t\r\n")
        #expect(throws: HTTPTestClientError.noResponse(received: "")) { try client.nextResponse() }
        try client.advance(by: .seconds(9))
        #expect(!client.isClosedByServer)
        try client.advance(by: .seconds(2))
        #expect(try client.nextResponse().status == .requestTimeout)
    }
}
