import HTTPTypes
import LoopKitHTTPTesting
import Testing
@testable import LoopKitHTTP

/// `throw HTTPError(.notFound)` from any handler form answers with that status, its message and fields;
/// any other error is 500.
@Suite("Thrown HTTP errors")
struct HTTPErrorTests {
    struct Unexpected: Error {}

    static func router() -> HTTPRouter {
        var router = HTTPRouter()
        router.get("/sync/:id") { request in
            guard request.parameters["id"] == "1" else { throw HTTPError(.notFound, "no todo \(request.parameters["id"] ?? "")") }
            return .text("todo 1")
        }
        router.get("/async", .inTask) { _ in
            await Task.yield()
            throw HTTPError(.tooManyRequests, headerFields: [.retryAfter: "30"])
        }
        router.on(.post, "/stream", bodyLimit: nil) { _, body in
            for try await _ in body {}
            throw HTTPError(.unprocessableContent, "not a todo")
        }
        router.get("/broken") { _ in throw Unexpected() }
        router.webSocket("/ws", shouldUpgrade: { _ in throw HTTPError(.unauthorized) }) { _, _ in }
        return router
    }

    @Test(arguments: HTTPTestMode.allCases)
    func aSyncHandlersHTTPErrorIsItsStatusAndMessage(mode: HTTPTestMode) throws {
        let client = try HTTPTestClient(router: Self.router(), mode: mode)
        #expect(try client.execute(.get, "/sync/1").text == "todo 1")
        let response = try client.execute(.get, "/sync/2")
        #expect(response.status == .notFound)
        #expect(response.text == "no todo 2")
        #expect(response.headerFields[.contentType] == "text/plain; charset=utf-8")
    }

    @Test(arguments: HTTPTestMode.allCases)
    func anAsyncHandlersHTTPErrorKeepsItsFieldsAndTheReasonPhrase(mode: HTTPTestMode) throws {
        let client = try HTTPTestClient(router: Self.router(), mode: mode)
        let response = try client.execute(.get, "/async")
        #expect(response.status == .tooManyRequests)
        #expect(response.text == "Too Many Requests")
        #expect(response.headerFields[.retryAfter] == "30")
    }

    @Test(arguments: HTTPTestMode.allCases)
    func aStreamingRoutesHTTPErrorIsItsStatus(mode: HTTPTestMode) throws {
        let client = try HTTPTestClient(router: Self.router(), mode: mode)
        let response = try client.execute(.post, "/stream", body: Bytes("{}"))
        #expect(response.status == .unprocessableContent)
        #expect(response.text == "not a todo")
    }

    @Test(arguments: HTTPTestMode.allCases)
    func anyOtherErrorIs500(mode: HTTPTestMode) throws {
        let client = try HTTPTestClient(router: Self.router(), mode: mode)
        #expect(try client.execute(.get, "/broken").status == .internalServerError)
    }

    @Test(arguments: HTTPTestMode.allCases)
    func anUpgradeCheckThatThrowsHTTPErrorRefusesWithItsStatus(mode: HTTPTestMode) throws {
        let client = try HTTPTestClient(router: Self.router(), mode: mode)
        #expect {
            _ = try client.webSocket("/ws")
        } throws: { error in
            guard case WebSocketTestClientError.notUpgraded(let response) = error else { return false }
            return response.status == .unauthorized
        }
    }

    @Test func anHTTPErrorBehindMiddlewareIsItsStatus() throws {
        var router = Self.router()
        router.use(AccessLogMiddleware())
        let client = try HTTPTestClient(router: router)
        #expect(try client.execute(.get, "/sync/9").status == .notFound)
    }
}
