import HTTPTypes
import LoopKit
import LoopKitHTTPTesting
import Testing
@testable import LoopKitHTTP

@Suite("HTTP test client over HTTP/2: the same client API, each request a stream of nghttp2's client session")
struct HTTPTestClientHTTP2Tests {
    /// `testRouter`'s routes, and the protocol a request arrived in.
    static func router(gate: Gate = Gate()) -> HTTPRouter {
        var router = testRouter(gate: gate)
        router.get("/version") { request in .text("HTTP/\(request.version.major)") }
        router.on(.post, "/count", bodyLimit: nil) { _, body in
            var count = 0
            for try await chunk in body { count += chunk.count }
            return .text("\(count) bytes")
        }
        router.get("/events") { _ in
            .events(keepAlive: nil) { events in
                try await events.send(ServerSentEvent(event: "first", id: "1", data: "one"))
                await gate.wait()
                try await events.send(ServerSentEvent(event: "second", id: "2", data: "two\nlines"))
            }
        }
        return router
    }

    @Test("Each request reaches the route as HTTP/2", arguments: HTTPTestMode.http2Cases)
    func requestsArriveAsHTTP2(mode: HTTPTestMode) throws {
        let client = try HTTPTestClient(router: Self.router(), mode: mode)
        #expect(try client.execute(.get, "/version").text == "HTTP/2")
        let hello = try client.execute(.get, "/hello")
        #expect(hello.status == .ok)
        #expect(hello.text == "Hello, World!")
        #expect(hello.headerFields[.contentType] == "text/plain")
        #expect(try client.execute(.get, "/users/7").text == "user 7")
        #expect(try client.execute(.get, "/nowhere").status == .notFound)
    }

    @Test("The HTTP/1.1 modes stay HTTP/1.1", arguments: HTTPTestMode.allCases)
    func theHTTP1ModesStayHTTP1(mode: HTTPTestMode) throws {
        let client = try HTTPTestClient(router: Self.router(), mode: mode)
        #expect(try client.execute(.get, "/version").text == "HTTP/1")
    }

    @Test("A request body is sent as DATA and a swift-http-types request keeps its fields", arguments: HTTPTestMode.http2Cases)
    func aRequestBodyIsEchoed(mode: HTTPTestMode) throws {
        let client = try HTTPTestClient(router: Self.router(), mode: mode)
        let request = HTTPRequest(method: .post, scheme: nil, authority: "example.com", path: "/echo",
                                  headerFields: [.contentType: "text/plain"])
        #expect(try client.execute(request, body: Bytes("ping")).text == "ping")
        let large = Bytes([UInt8](repeating: 0x61, count: 300_000))
        #expect(try client.execute(.post, "/echo", body: large).body == large)
    }

    @Test("A body written in pieces, and chunked, reaches a streaming route whole", arguments: HTTPTestMode.http2Cases)
    func aBodyWrittenInPiecesIsStreamed(mode: HTTPTestMode) throws {
        let client = try HTTPTestClient(router: Self.router(), mode: mode)
        try client.send("POST /count HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\nhello")
        try client.send("world")
        #expect(try client.nextResponse().text == "10 bytes")
        try client.send("POST /count HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n")
        try client.send("4\r\ndefg\r\n0\r\n\r\n")
        #expect(try client.nextResponse().text == "7 bytes")
    }

    @Test("A streamed response without a length is read chunked, whole", arguments: HTTPTestMode.http2Cases)
    func aStreamedResponseIsReadWhole(mode: HTTPTestMode) throws {
        let client = try HTTPTestClient(router: Self.router(), mode: mode)
        let response = try client.execute(.get, "/stream?bytes=200000")
        #expect(response.body.count == 200_000)
        #expect(response.headerFields[.transferEncoding] == "chunked")
        #expect(try client.execute(.get, "/hello").text == "Hello, World!")  // the connection goes on
    }

    @Test("In memory, a streamed response arrives over several steps", arguments: [HTTPTestMode.inMemoryHTTP2])
    func aStreamedResponseArrivesInSteps(mode: HTTPTestMode) throws {
        let client = try HTTPTestClient(router: Self.router(), mode: mode)
        try client.send("GET /stream?bytes=200000 HTTP/1.1\r\nHost: t\r\n\r\n")
        var sizes: [Int] = []
        while try client.step() { sizes.append(client.receivedText.count) }
        #expect(sizes == sizes.sorted())
        #expect(Set(sizes).count > 2)
        #expect(try client.nextResponse().body.count == 200_000)
    }

    @Test("HEAD is answered with the fields and no body", arguments: HTTPTestMode.http2Cases)
    func headHasNoBody(mode: HTTPTestMode) throws {
        let client = try HTTPTestClient(router: Self.router(), mode: mode)
        let response = try client.execute(.head, "/hello")
        #expect(response.status == .ok)
        #expect(response.body.isEmpty)
        #expect(response.headerFields[.contentLength] == "13")
        #expect(try client.execute(.get, "/hello").text == "Hello, World!")  // nothing of a body was left over
    }

    @Test("Server-sent events are read one by one while the stream is open, then nil at its end", arguments: HTTPTestMode.http2Cases)
    func serverSentEventsOneByOne(mode: HTTPTestMode) throws {
        let gate = Gate()
        let client = try HTTPTestClient(router: Self.router(gate: gate), mode: mode)
        try client.send(HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/events"))
        #expect(try client.nextEvent() == ServerSentEvent(event: "first", id: "1", data: "one"))
        gate.open()
        #expect(try client.nextEvent() == ServerSentEvent(event: "second", id: "2", data: "two\nlines"))
        #expect(try client.nextEvent() == nil)
        #expect(try client.execute(.get, "/hello").text == "Hello, World!")
    }

    @Test("A whole event stream parses as serverSentEvents", arguments: HTTPTestMode.http2Cases)
    func serverSentEventsWhole(mode: HTTPTestMode) throws {
        let gate = Gate()
        gate.open()
        let client = try HTTPTestClient(router: Self.router(gate: gate), mode: mode)
        let response = try client.execute(.get, "/events")
        #expect(response.headerFields[.contentType]?.hasPrefix("text/event-stream") == true)
        #expect(response.serverSentEvents.map(\.data) == ["one", "two\nlines"])
    }

    @Test("Responses are read in request order, though HTTP/2 answers the later request first")
    func responsesComeInRequestOrder() throws {
        let gate = Gate()
        let client = try HTTPTestClient(router: Self.router(gate: gate), mode: .inMemoryHTTP2)
        try client.send("GET /gate HTTP/1.1\r\nHost: t\r\n\r\nGET /hello HTTP/1.1\r\nHost: t\r\n\r\n")
        try client.runUntilIdle()
        #expect(client.receivedText.isEmpty)  // /hello is answered on its stream, and held behind /gate's
        gate.open()
        #expect(try client.nextResponse().text == "opened")
        #expect(try client.nextResponse().text == "Hello, World!")
    }

    @Test("Expect: 100-continue gets its 100 before the body is sent", arguments: HTTPTestMode.http2Cases)
    func expectContinue(mode: HTTPTestMode) throws {
        let client = try HTTPTestClient(router: Self.router(), mode: mode)
        try client.send("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n")
        #expect(try client.nextResponse().status == .continue)
        try client.send("pong")
        #expect(try client.nextResponse().text == "pong")
    }

    @Test("Connection: close ends the connection once its response is read", arguments: HTTPTestMode.http2Cases)
    func connectionCloseEndsTheConnection(mode: HTTPTestMode) throws {
        let client = try HTTPTestClient(router: Self.router(), mode: mode)
        let response = try client.execute(.get, "/hello", headerFields: [.connection: "close"])
        #expect(response.text == "Hello, World!")
        #expect(response.headerFields[.connection] == "close")
        #expect(client.isClosedByServer)
    }

    @Test("The async forms work across awaits", arguments: HTTPTestMode.http2Cases)
    func theAsyncForms(mode: HTTPTestMode) async throws {
        var configuration = HTTPServer.Configuration()
        // After the yield the test waits for a thread of Swift's pool, which the whole suite's blocking tests
        // can hold for over a minute (make test-sanitize): not long enough for the server to end the connection.
        configuration.idleTimeout = .seconds(600)
        let client = try HTTPTestClient(router: Self.router(), configuration: configuration, mode: mode)
        await Task.yield()
        #expect(try await client.execute(.get, "/version").text == "HTTP/2")
        #expect(try await client.execute(.get, "/async").text == "async on loop: true")
    }

    /// What the client has received after each step of a fixed exchange, in memory over HTTP/2.
    func trace() throws -> [String] {
        let client = try HTTPTestClient(router: Self.router(), mode: .inMemoryHTTP2)
        var trace: [String] = []
        try client.send("GET /hello HTTP/1.1\r\nHost: t\r\n\r\nGET /stream?bytes=70000 HTTP/1.1\r\nHost: t\r\n\r\nGET /async HTTP/1.1\r\nHost: t\r\n\r\n")
        while try client.step() { trace.append("\(client.receivedText.count)") }
        return trace
    }

    @Test("In memory, the same exchange gives the same trace every run")
    func theSameTrace() throws {
        let first = try trace()
        #expect(first.count > 3)
        for _ in 0..<5 { #expect(try trace() == first) }
    }

    @Test("A WebSocket throws notOverHTTP2: the server offers no WebSocket over HTTP/2 (RFC 8441)", arguments: HTTPTestMode.http2Cases)
    func webSocketThrows(mode: HTTPTestMode) throws {
        let client = try HTTPTestClient(router: Self.router(), mode: mode)
        #expect(throws: WebSocketTestClientError.notOverHTTP2) { _ = try client.webSocket("/chat") }
        #expect(try client.execute(.get, "/hello").status == .ok)  // the connection is untouched
    }

    @Test("Bytes that are no HTTP/1.1 request cannot be carried, and say so", arguments: HTTPTestMode.http2Cases)
    func rawBadInputIsRefused(mode: HTTPTestMode) throws {
        let client = try HTTPTestClient(router: Self.router(), mode: mode)
        #expect {
            try client.send("GARBAGE\r\n\r\n")
        } throws: { error in
            guard case HTTPTestClientError.notTranslatable(let reason) = error else { return false }
            return reason.contains("GARBAGE")
        }
    }

    @Test("An HTTP/2 mode without configuration.http2 cannot start", arguments: HTTPTestMode.http2Cases)
    func needsHTTP2Settings(mode: HTTPTestMode) throws {
        var configuration = HTTPServer.Configuration()
        configuration.http2 = nil
        #expect {
            _ = try HTTPTestClient(router: Self.router(), configuration: configuration, mode: mode)
        } throws: { error in
            guard case HTTPTestClientError.cannotStart(let reason) = error else { return false }
            return reason.contains("configuration.http2")
        }
    }

    @Test("In memory, the server's idle timeout fires on virtual time: GOAWAY reads as the connection closing")
    func idleTimeoutOnVirtualTime() throws {
        var configuration = HTTPServer.Configuration()
        configuration.idleTimeout = .seconds(5)
        let client = try HTTPTestClient(router: Self.router(), configuration: configuration, mode: .inMemoryHTTP2)
        #expect(try client.execute(.get, "/hello").status == .ok)
        try client.advance(by: .seconds(4))
        try client.runUntilIdle()
        #expect(!client.isClosedByServer)
        try client.advance(by: .seconds(2))
        try client.runUntilIdle()
        #expect(client.isClosedByServer)
    }

    // Found by running the repository's tests over HTTP/2: a request body that stalled was never timed out.

    @Test("A collected body that stalls past bodyTimeout is answered 408 on its stream; the connection goes on")
    func aStalledBodyIs408() throws {
        var configuration = HTTPServer.Configuration()
        configuration.bodyTimeout = .milliseconds(100)
        let client = try HTTPTestClient(router: Self.router(), configuration: configuration, mode: .inMemoryHTTP2)
        try client.send("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\nabc")
        try client.advance(by: .milliseconds(50))
        try client.runUntilIdle()
        #expect(client.receivedText.isEmpty)  // not yet
        try client.advance(by: .milliseconds(100))
        #expect(try client.nextResponse().status == .requestTimeout)
        #expect(!client.isClosedByServer)
        #expect(try client.execute(.get, "/hello").text == "Hello, World!")
    }

    @Test("A body that keeps arriving within bodyTimeout is not cut, however long it takes in all")
    func aSlowButSteadyBodyIsNotCut() throws {
        var configuration = HTTPServer.Configuration()
        configuration.bodyTimeout = .milliseconds(100)
        let client = try HTTPTestClient(router: Self.router(), configuration: configuration, mode: .inMemoryHTTP2)
        try client.send("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\n")
        for letter in ["a", "b", "c", "d"] {
            try client.advance(by: .milliseconds(80))
            try client.send(letter)
        }
        try client.advance(by: .milliseconds(80))
        try client.send("e")
        #expect(try client.nextResponse().text == "abcde")
    }

    @Test("A streamed body that stalls past bodyTimeout ends its handler's body and resets the stream")
    func aStalledStreamedBodyIsReset() throws {
        var configuration = HTTPServer.Configuration()
        configuration.bodyTimeout = .milliseconds(100)
        let client = try HTTPTestClient(router: Self.router(), configuration: configuration, mode: .inMemoryHTTP2)
        try client.send("POST /count HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\nabc")
        try client.advance(by: .milliseconds(150))
        try client.runUntilIdle()
        #expect(client.isClosedByServer)  // the reset, as the translated connection reads it
        #expect(client.receivedText.isEmpty)
    }

    /// A client over HTTP/2 whose server has the given limits.
    private func client(_ mode: HTTPTestMode, _ configure: (inout HTTPServer.Configuration) -> Void) throws -> HTTPTestClient {
        var configuration = HTTPServer.Configuration()
        configure(&configuration)
        return try HTTPTestClient(router: Self.router(), configuration: configuration, mode: mode)
    }

    @Test("A head over the server's head size limit gets 431 on its stream, as on HTTP/1, and the connection goes on",
          arguments: HTTPTestMode.http2Cases)
    func anOverLargeHeadIs431(mode: HTTPTestMode) throws {
        let client = try client(mode) { $0.limits.maxHeadSize = 512 }
        let fields = (0..<40).map { "X-F\($0): \(String(repeating: "v", count: 30))\r\n" }.joined()
        try client.send("GET /hello HTTP/1.1\r\nHost: t\r\n\(fields)\r\n")
        #expect(try client.nextResponse().status.code == 431)
        #expect(try client.execute(.get, "/hello").text == "Hello, World!")
    }

    @Test("More fields than the server's field count limit get 431 on their stream", arguments: HTTPTestMode.http2Cases)
    func tooManyFieldsAre431(mode: HTTPTestMode) throws {
        let client = try client(mode) { $0.limits.maxFieldCount = 3 }
        try client.send("GET /hello HTTP/1.1\r\nHost: t\r\nA: 1\r\nB: 2\r\nC: 3\r\nD: 4\r\n\r\n")
        #expect(try client.nextResponse().status.code == 431)
        try client.send("GET /hello HTTP/1.1\r\nHost: t\r\nA: 1\r\nB: 2\r\n\r\n")
        #expect(try client.nextResponse().status == .ok)
    }

    @Test("A path longer than the server's request line limit gets 431 on its stream", arguments: HTTPTestMode.http2Cases)
    func anOverLongPathIs431(mode: HTTPTestMode) throws {
        let client = try client(mode) { $0.limits.maxRequestLineLength = 64 }
        #expect(try client.execute(.get, "/" + String(repeating: "a", count: 100)).status.code == 431)
        #expect(try client.execute(.get, "/hello").status == .ok)
    }
}
