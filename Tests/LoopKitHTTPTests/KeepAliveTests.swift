import Synchronization
import HTTPTypes
import LoopKitHTTPTesting
import Testing
@testable import LoopKitHTTP

/// Each test runs twice: in memory on a stepped loop and live over a socket (``HTTPTestClient``).
@Suite("Keep-alive and Connection: close")
struct KeepAliveTests {
    @Test(arguments: HTTPTestMode.allCases)
    func http11ConnectionServesSeveralRequests(mode: HTTPTestMode) throws {
        let client = try HTTPTestClient(router: testRouter(), mode: mode)
        for _ in 0..<3 {
            let response = try client.execute(.get, "/hello")
            #expect(response.status == .ok)
            #expect(response.text == "Hello, World!")
            #expect(response.headerFields[.connection] == nil)
        }
    }

    /// A keep-alive connection parses each request into the last one's head once nothing references it:
    /// a request a handler kept keeps its own head, and the next request gets its own, built or not.
    @Test(arguments: HTTPTestMode.allCases)
    func aRequestKeptByItsHandlerKeepsItsHeadWhileTheNextIsParsed(mode: HTTPTestMode) throws {
        let kept = Mutex<[HTTPServerRequest]>([])
        var router = HTTPRouter()
        router.get("/keep/:n") { request in
            kept.withLock { $0.append(request) }
            return .text(request.head.headerFields[HTTPField.Name("X-N")!] ?? "none")
        }
        router.get("/plain/:n") { request in .text(String(request.path)) }
        let client = try HTTPTestClient(router: router, mode: mode)
        for n in 0..<3 {
            #expect(try client.execute(.get, "/keep/\(n)", headerFields: [HTTPField.Name("X-N")!: "\(n)"]).text == "\(n)")
            #expect(try client.execute(.get, "/plain/\(n)").text == "/plain/\(n)")
        }
        let requests = kept.withLock { $0 }
        #expect(requests.map { String($0.path) } == ["/keep/0", "/keep/1", "/keep/2"])
        #expect(requests.map { $0.head.headerFields[HTTPField.Name("X-N")!] } == ["0", "1", "2"])
        #expect(requests.map { $0.head.path } == ["/keep/0", "/keep/1", "/keep/2"])
    }

    @Test(arguments: HTTPTestMode.allCases)
    func serverSetsDateAndContentLength(mode: HTTPTestMode) throws {
        let response = try HTTPTestClient(router: testRouter(), mode: mode).execute(.get, "/hello")
        #expect(response.headerFields[.contentLength] == "13")
        #expect(response.headerFields[.date]?.hasSuffix(" GMT") == true)
    }

    @Test(arguments: HTTPTestMode.allCases)
    func connectionCloseIsAnsweredThenClosed(mode: HTTPTestMode) throws {
        let client = try HTTPTestClient(router: testRouter(), mode: mode)
        let response = try client.execute(.get, "/hello", headerFields: [.connection: "close"])
        #expect(response.status == .ok)
        #expect(response.headerFields[.connection] == "close")
        #expect(try client.readUntilClosed().isEmpty)
    }

    @Test(arguments: HTTPTestMode.allCases)
    func http10ClientIsAnsweredThenClosed(mode: HTTPTestMode) throws {
        let client = try HTTPTestClient(router: testRouter(), mode: mode)
        try client.send("GET /hello HTTP/1.0\r\n\r\n")
        let response = try client.nextResponse()
        #expect(response.status == .ok)
        #expect(response.text == "Hello, World!")
        #expect(try client.readUntilClosed().isEmpty)
    }

    @Test(arguments: HTTPTestMode.allCases)
    func http10KeepAliveIsHonoured(mode: HTTPTestMode) throws {
        let client = try HTTPTestClient(router: testRouter(), mode: mode)
        try client.send("GET /hello HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        #expect(try client.nextResponse().headerFields[.connection] == "keep-alive")
        try client.send("GET /hello HTTP/1.0\r\n\r\n")
        #expect(try client.nextResponse().status == .ok)
        #expect(try client.readUntilClosed().isEmpty)
    }

    @Test(arguments: HTTPTestMode.allCases)
    func idleKeepAliveConnectionIsClosedAfterItsTimeout(mode: HTTPTestMode) throws {
        var configuration = HTTPServer.Configuration()
        configuration.idleTimeout = .milliseconds(100)
        let client = try HTTPTestClient(router: testRouter(), configuration: configuration, mode: mode)
        #expect(try client.execute(.get, "/hello").status == .ok)
        try client.advance(by: .milliseconds(150))
        #expect(try client.readUntilClosed().isEmpty)  // closed without a response
    }

    /// In memory the timeout is exact on virtual time: open just before it, closed once it has passed.
    @Test func idleTimeoutFiresOnVirtualTimeAndNotBefore() throws {
        var configuration = HTTPServer.Configuration()
        configuration.idleTimeout = .seconds(60)
        let client = try HTTPTestClient(router: testRouter(), configuration: configuration)
        #expect(try client.execute(.get, "/hello").status == .ok)
        try client.advance(by: .seconds(55))
        #expect(!client.isClosedByServer)
        try client.advance(by: .seconds(10))
        try client.runUntilIdle()
        #expect(client.isClosedByServer)
        #expect(client.receivedText.isEmpty)
    }
}
