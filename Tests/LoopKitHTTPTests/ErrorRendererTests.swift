import HTTPTypes
import LoopKit
import LoopKitHTTPTesting
import Synchronization
import Testing
@testable import LoopKitHTTP

/// One synchronous hook (`configuration.errorRenderer`) renders every failure: what a handler, a middleware
/// or an upgrade check throws, a request no route takes, and the server's own refusals. `.json` is a line
/// away; an inline route that throws is still answered inline, with no task.
@Suite("Error rendering")
struct ErrorRendererTests {
    struct Unexpected: Error, CustomStringConvertible {
        var description: String { "a secret the client must not see" }
    }

    static var json: HTTPServer.Configuration {
        var configuration = HTTPServer.Configuration()
        configuration.maxBodySize = 16
        configuration.errorRenderer = .json
        return configuration
    }

    static func router() -> HTTPRouter {
        var router = HTTPRouter()
        router.get("/todos/:id") { request in
            throw HTTPError(.notFound, "no todo \"\(request.parameters["id"] ?? "")\"", headerFields: [.retryAfter: "5"])
        }
        router.get("/async", .inTask) { _ in
            await Task.yield()
            throw HTTPError(.tooManyRequests)
        }
        router.get("/broken") { _ in throw Unexpected() }
        router.post("/todos") { _ in .text("created", status: .created) }
        return router
    }

    static let jsonType = "application/json; charset=utf-8"

    @Test(arguments: HTTPTestMode.allCases)
    func jsonRendersAThrownHTTPErrorWithItsStatusMessageAndFields(mode: HTTPTestMode) throws {
        let client = try HTTPTestClient(router: Self.router(), configuration: Self.json, mode: mode)
        let response = try client.execute(.get, "/todos/7")
        #expect(response.status == .notFound)
        #expect(response.headerFields[.contentType] == Self.jsonType)
        #expect(response.headerFields[.retryAfter] == "5")
        #expect(response.text == #"{"error":{"status":404,"message":"no todo \"7\""}}"#)
    }

    @Test(arguments: HTTPTestMode.allCases)
    func jsonRendersAnAsyncRoutesErrorWithTheReasonPhrase(mode: HTTPTestMode) throws {
        let client = try HTTPTestClient(router: Self.router(), configuration: Self.json, mode: mode)
        let response = try client.execute(.get, "/async")
        #expect(response.status == .tooManyRequests)
        #expect(response.text == #"{"error":{"status":429,"message":"Too Many Requests"}}"#)
    }

    @Test func jsonRendersAnUnexpectedErrorAs500WithoutItsDescription() throws {
        let client = try HTTPTestClient(router: Self.router(), configuration: Self.json)
        let response = try client.execute(.get, "/broken")
        #expect(response.status == .internalServerError)
        #expect(response.text == #"{"error":{"status":500,"message":"Internal Server Error"}}"#)
    }

    @Test(arguments: HTTPTestMode.allCases)
    func jsonRendersARequestNoRouteTakesAndA405KeepsItsAllow(mode: HTTPTestMode) throws {
        let client = try HTTPTestClient(router: Self.router(), configuration: Self.json, mode: mode)
        let notFound = try client.execute(.get, "/nowhere")
        #expect(notFound.status == .notFound)
        #expect(notFound.headerFields[.contentType] == Self.jsonType)
        #expect(notFound.text == #"{"error":{"status":404,"message":"Not Found"}}"#)
        let notAllowed = try client.execute(.delete, "/todos")
        #expect(notAllowed.status == .methodNotAllowed)
        #expect(notAllowed.headerFields[.allow] == "POST, OPTIONS")
        #expect(notAllowed.text == #"{"error":{"status":405,"message":"Method Not Allowed"}}"#)
    }

    @Test(arguments: HTTPTestMode.allCases)
    func jsonRendersTheParsersRefusalAndTheConnectionCloses(mode: HTTPTestMode) throws {
        let client = try HTTPTestClient(router: Self.router(), configuration: Self.json, mode: mode)
        try client.send("POST /todos HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\n")
        let response = try client.nextResponse()
        #expect(response.status == .contentTooLarge)
        #expect(response.headerFields[.contentType] == Self.jsonType)
        #expect(response.headerFields[.connection] == "close")
        #expect(response.text == #"{"error":{"status":413,"message":"Content Too Large"}}"#)
        #expect(try client.readUntilClosed().isEmpty)
    }

    /// In memory, on virtual time: a head that arrives too slowly is a refusal with no parser error.
    @Test func jsonRendersASlowHeads408() throws {
        var configuration = Self.json
        configuration.headTimeout = .seconds(1)
        let origin = Lock<HTTPErrorRenderer.Failure.Origin?>(nil)
        configuration.errorRenderer = HTTPErrorRenderer { failure in
            origin.withLock { $0 = failure.error == nil ? failure.origin : nil }
            return HTTPErrorRenderer.json.response(for: failure)
        }
        let client = try HTTPTestClient(router: Self.router(), configuration: configuration)
        try client.send("GET /todos/1 HTTP/1.1\r\nHost: t\r\n")  // never finishes the head
        try client.advance(by: .seconds(2))
        let response = try client.nextResponse()
        #expect(response.status == .requestTimeout)
        #expect(response.text == #"{"error":{"status":408,"message":"Request Timeout"}}"#)
        #expect(origin.withLock { $0 } == .refusal)
    }

    @Test func jsonRendersAnErrorThrownBehindAsyncMiddleware() throws {
        var router = Self.router()
        router.use(AccessLogMiddleware())
        let client = try HTTPTestClient(router: router, configuration: Self.json)
        let response = try client.execute(.get, "/todos/3")
        #expect(response.status == .notFound)
        #expect(response.headerFields[.contentType] == Self.jsonType)
    }

    @Test func aCustomRendererIsToldEachFailuresOriginAndError() throws {
        let seen = Lock<[String]>([])
        var configuration = Self.json
        configuration.errorRenderer = HTTPErrorRenderer { failure in
            let error = failure.error.map { "\(type(of: $0))" } ?? "none"
            seen.withLock { $0.append("\(failure.status.code) \(failure.origin) \(error)") }
            return .text("custom \(failure.status.code)", status: failure.status)
        }
        let client = try HTTPTestClient(router: Self.router(), configuration: configuration)
        #expect(try client.execute(.get, "/todos/1").text == "custom 404")
        #expect(try client.execute(.get, "/broken").text == "custom 500")
        #expect(try client.execute(.get, "/nowhere").text == "custom 404")
        try client.send("GET / HTTP/1.1\r\nHost: t\r\nContent-Length: x\r\n\r\n")
        #expect(try client.nextResponse().text == "custom 400")
        #expect(seen.withLock { $0 } == ["404 thrown HTTPError", "500 thrown Unexpected", "404 noRoute none",
                                         "400 refusal HTTPRequestError"])
    }

    @Test func thePlainTextRendererIsTheDefaultAndAnswersAsBefore() throws {
        #expect(HTTPServer.Configuration().errorRenderer.response(for: .init(status: .notFound)).head.headerFields[.contentType]
            == "text/plain; charset=utf-8")
        let client = try HTTPTestClient(router: Self.router())
        let response = try client.execute(.get, "/todos/7")
        #expect(response.text == #"no todo "7""#)
        #expect(response.headerFields[.contentType] == "text/plain; charset=utf-8")
    }

    @Test func jsonEscapesQuotesBackslashesAndControlCharacters() {
        let response = HTTPErrorRenderer.json.response(for: .init(status: .badRequest, message: "a\"b\\c\nd\u{1}é"))
        guard case .bytes(let body) = response.body.storage else {
            Issue.record("a streamed body")
            return
        }
        #expect(body.utf8String == #"{"error":{"status":400,"message":"a\"b\\c\nd\u0001é"}}"#)
    }

    /// In memory, step by step: an inline route that throws is answered in the same steps as one that
    /// returns (its handler and its renderer in the step that reads the request, inside the read callback).
    @Test func anInlineRouteThatThrowsIsRenderedInTheStepThatReadsItsRequest() throws {
        let step = Atomic<Int>(0)
        let renderedAt = Atomic<Int>(-1)
        var configuration = HTTPServer.Configuration()
        configuration.errorRenderer = HTTPErrorRenderer { failure in
            renderedAt.store(step.load(ordering: .relaxed), ordering: .relaxed)
            return HTTPErrorRenderer.json.response(for: failure)
        }
        var router = HTTPRouter()
        router.get("/ok") { _ in .text("ok") }
        router.get("/thrown") { _ in throw HTTPError(.conflict) }
        var answeredAfter: [String: Int] = [:]
        for path in ["ok", "thrown"] {
            let client = try HTTPTestClient(router: router, configuration: configuration)
            defer { client.shutDown() }
            try client.send("GET /\(path) HTTP/1.1\r\nHost: t\r\n\r\n")
            step.store(0, ordering: .relaxed)
            while client.receivedText.isEmpty, try client.step() { step.add(1, ordering: .relaxed) }
            #expect(client.receivedText.hasSuffix(path == "ok" ? "ok" : #"Conflict"}}"#))
            answeredAfter[path] = step.load(ordering: .relaxed)
        }
        #expect(renderedAt.load(ordering: .relaxed) == 0)
        #expect(answeredAfter == ["ok": 2, "thrown": 2])
    }

    /// Live (the loop has a thread of its own): the renderer of an inline route's error runs on the loop,
    /// outside any task; an async route's runs in its task, on the loop.
    @Test func theRendererOfAnInlineRoutesErrorRunsOnTheLoopWithNoTask() throws {
        var configuration = HTTPServer.Configuration()
        configuration.errorRenderer = HTTPErrorRenderer { failure in
            let inTask = withUnsafeCurrentTask { $0 != nil }
            return .text(inTask ? "task" : "no task", status: failure.status)
        }
        var router = HTTPRouter()
        router.get("/inline") { _ in throw HTTPError(.conflict) }
        router.get("/task", .inTask) { _ in throw HTTPError(.conflict) }
        let client = try HTTPTestClient(router: router, configuration: configuration, mode: .live)
        defer { client.shutDown() }
        #expect(try client.execute(.get, "/inline").text == "no task")
        #expect(try client.execute(.get, "/task").text == "task")
    }
}
