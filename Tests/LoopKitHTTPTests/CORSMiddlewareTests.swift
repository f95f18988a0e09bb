import HTTPTypes
import LoopKitHTTPTesting
import Testing
@testable import LoopKitHTTP

@Suite("CORS middleware")
struct CORSMiddlewareTests {
    func corsRouter(_ cors: CORSMiddleware, handled: Recorder<String> = Recorder()) -> HTTPRouter {
        var router = HTTPRouter()
        router.use(cors)
        router.use(before: { request in  // an authentication check after CORS: its refusals carry CORS fields
            request.head.method == .options || request.head.headerFields[.authorization] != nil
                ? nil : .text("Unauthorized", status: .unauthorized)
        })
        router.get("/items") { _ in
            handled.record("GET")
            return .text("[]")
        }
        router.post("/items") { _ in
            handled.record("POST")
            return .text("made", status: .created)
        }
        return router
    }

    @Test(arguments: HTTPTestMode.allCases)
    func aPreflightIsAnsweredEarlyWithTheAllowedMethodsAndHeaders(mode: HTTPTestMode) throws {
        let handled = Recorder<String>()
        let client = try HTTPTestClient(router: corsRouter(CORSMiddleware(), handled: handled), mode: mode)
        defer { client.shutDown() }
        let response = try client.execute(.options, "/items", headerFields: [
            .origin: "https://app.example", .accessControlRequestMethod: "POST",
            .accessControlRequestHeaders: "content-type, authorization",
        ])
        #expect(response.status == .noContent)
        #expect(response.headerFields[.accessControlAllowOrigin] == "*")
        #expect(response.headerFields[.accessControlAllowMethods] == "GET, HEAD, POST, PUT, PATCH, DELETE")
        #expect(response.headerFields[.accessControlAllowHeaders] == "content-type, authorization")
        #expect(response.headerFields[.accessControlMaxAge] == "600")
        #expect(response.headerFields[.allow] == nil)  // not the router's own OPTIONS answer
        #expect(handled.all.isEmpty)
    }

    @Test func anOptionsRequestWithoutOriginIsTheRoutersAsBefore() throws {
        let client = try HTTPTestClient(router: corsRouter(CORSMiddleware()))
        defer { client.shutDown() }
        let response = try client.execute(.options, "/items")
        #expect(response.status == .noContent)
        #expect(response.headerFields[.allow] == "GET, POST, HEAD, OPTIONS")
        #expect(response.headerFields[.accessControlAllowOrigin] == nil)
    }

    @Test func responsesToAnAllowedOriginCarryAllowOriginOnTheWayOut() throws {
        let cors = CORSMiddleware(allowedOrigin: .only(["https://app.example"]), exposedHeaders: [.requestID],
                                  allowsCredentials: true)
        let client = try HTTPTestClient(router: corsRouter(cors))
        defer { client.shutDown() }
        let allowed = try client.execute(.get, "/items", headerFields: [.origin: "https://app.example", .authorization: "x"])
        #expect(allowed.text == "[]")
        #expect(allowed.headerFields[.accessControlAllowOrigin] == "https://app.example")
        #expect(allowed.headerFields[.accessControlAllowCredentials] == "true")
        #expect(allowed.headerFields[.accessControlExposeHeaders] == "X-Request-ID")
        #expect(allowed.headerFields[.vary] == "Origin")
        let refusedEarly = try client.execute(.get, "/items", headerFields: [.origin: "https://app.example"])
        #expect(refusedEarly.status == .unauthorized)
        #expect(refusedEarly.headerFields[.accessControlAllowOrigin] == "https://app.example")
        let other = try client.execute(.get, "/items", headerFields: [.origin: "https://evil.example", .authorization: "x"])
        #expect(other.text == "[]")
        #expect(other.headerFields[.accessControlAllowOrigin] == nil)
        let otherPreflight = try client.execute(.options, "/items", headerFields: [
            .origin: "https://evil.example", .accessControlRequestMethod: "POST",
        ])
        #expect(otherPreflight.status == .noContent)
        #expect(otherPreflight.headerFields[.accessControlAllowOrigin] == nil)
        #expect(otherPreflight.headerFields[.accessControlAllowMethods] == nil)
    }
}
