import HTTPTypes
import LoopKit
import LoopKitHTTPTesting
import Testing
@testable import LoopKitHTTP

@Suite("HTTP test client: in memory on a stepped loop, or live")
struct HTTPTestClientTests {
    /// What the client has received after each step of a fixed exchange (keep-alive, a streamed body, an
    /// async handler, a timeout), in memory.
    func trace() throws -> [String] {
        var configuration = HTTPServer.Configuration()
        configuration.idleTimeout = .seconds(5)
        let client = try HTTPTestClient(router: testRouter(), configuration: configuration)
        var trace: [String] = []
        try client.send("GET /hello HTTP/1.1\r\nHost: t\r\n\r\nGET /stream?bytes=70000 HTTP/1.1\r\nHost: t\r\n\r\nGET /async HTTP/1.1\r\nHost: t\r\n\r\n")
        while try client.step() { trace.append("\(client.receivedText.count)") }
        try client.advance(by: .seconds(6))
        try client.runUntilIdle()
        trace.append("closed \(client.isClosedByServer)")
        return trace
    }

    @Test func theSameTestGivesTheSameTraceEveryRun() throws {
        let first = try trace()
        #expect(first.count > 3)
        #expect(first.last == "closed true")
        for _ in 0..<5 {
            let again = try trace()
            #expect(again == first, "first: \(first)\nagain: \(again)")
        }
    }

    @Test func aStreamedResponseIsReadAsItIsWritten() throws {
        let client = try HTTPTestClient(router: testRouter())
        try client.send("GET /stream?bytes=200000 HTTP/1.1\r\nHost: t\r\n\r\n")
        var sizes: [Int] = []
        while try client.step() { sizes.append(client.receivedText.count) }
        #expect(sizes == sizes.sorted())  // it only grows
        #expect(Set(sizes).count > 2)  // and arrives in several steps, not at once
        let response = try client.nextResponse()
        #expect(response.body.count == 200_000)
        #expect(response.headerFields[.transferEncoding] == "chunked")
    }

    @Test(arguments: HTTPTestMode.allCases)
    func aSwiftHTTPTypesRequestWithABody(mode: HTTPTestMode) throws {
        let client = try HTTPTestClient(router: testRouter(), mode: mode)
        let request = HTTPRequest(method: .post, scheme: nil, authority: "example.com", path: "/echo",
                                  headerFields: [.contentType: "text/plain"])
        let response = try client.execute(request, body: Bytes("ping"))
        #expect(response.status == .ok)
        #expect(response.text == "ping")
    }

    @Test(arguments: HTTPTestMode.allCases)
    func asyncHandlersRunOnTheServersLoop(mode: HTTPTestMode) throws {
        let client = try HTTPTestClient(router: testRouter(), mode: mode)
        #expect(try client.execute(.get, "/async").text == "async on loop: true")
    }

    @Test(arguments: HTTPTestMode.allCases)
    func aHeadResponseHasFieldsAndNoBody(mode: HTTPTestMode) throws {
        let client = try HTTPTestClient(router: testRouter(), mode: mode)
        let response = try client.execute(.head, "/hello")
        #expect(response.headerFields[.contentLength] == "13")
        #expect(response.body.isEmpty)
        #expect(try client.execute(.get, "/hello").text == "Hello, World!")  // nothing was left over
    }

    @Test(arguments: HTTPTestMode.allCases)
    func badBytesGet400AndAClosedConnection(mode: HTTPTestMode) throws {
        let client = try HTTPTestClient(router: testRouter(), mode: mode)
        try client.send("GET /hello HTTP/1.1\r\nHost: t\r\nContent-Length: x\r\n\r\n")
        #expect(try client.nextResponse().status == .badRequest)
        #expect(throws: HTTPTestClientError.closedEarly(received: "")) { try client.nextResponse() }
    }

    @Test func aServersRoutesAndConfigurationAreServedInMemory() throws {
        let group = try LoopGroup(threads: 1)
        defer { group.shutdown() }
        var configuration = HTTPServer.Configuration()
        configuration.maxBodySize = 4
        let server = HTTPServer(group: group, configuration: configuration, router: testRouter(), logger: quietLogger)
        let client = try HTTPTestClient(server: server)
        #expect(try client.execute(.post, "/echo", body: Bytes("12345")).status == .contentTooLarge)
        #expect(server.port == nil)  // the server itself was never started
    }

    @Test func shuttingDownClosesTheConnectionAndIsIdempotent() throws {
        let client = try HTTPTestClient(router: testRouter())
        #expect(try client.execute(.get, "/hello").status == .ok)
        client.shutDown()
        #expect(client.isClosedByServer)
        client.shutDown()
    }
}
