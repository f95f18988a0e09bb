import HTTPTypes
import LoopKitHTTPTesting
import Testing
@testable import LoopKitHTTP

@Suite("Routing: method + path, path parameters")
struct RoutingTests {
    let router = testRouter()

    @Test func literalPathMatchesItsMethodOnly() {
        #expect(found(router, .get, path: "/hello") != nil)
        #expect(found(router, .post, path: "/hello") == nil)
    }

    @Test func parameterSegmentBindsItsValue() throws {
        let (_, parameters) = try #require(found(router, .get, path: "/users/42"))
        #expect(parameters["id"] == "42")
    }

    @Test func aRemainderSegmentBindsTheRestOfThePath() throws {
        var router = HTTPRouter()
        router.get("/files/*rest") { _ in .text("") }
        #expect(found(router, .get, path: "/files/a/b/c.txt")?.1["rest"] == "a/b/c.txt")
        #expect(found(router, .get, path: "/files/docs/")?.1["rest"] == "docs/")
        #expect(found(router, .get, path: "/files")?.1["rest"] == "")
        #expect(found(router, .get, path: "/filesx/a") == nil)
    }

    @Test func segmentCountMustMatch() {
        #expect(found(router, .get, path: "/users") == nil)
        #expect(found(router, .get, path: "/users/1/more") == nil)
    }

    @Test func putPatchAndDeleteTakeAsyncHandlersAsGetAndPostDo() throws {
        var router = HTTPRouter()
        router.put("/items/:id", .inTask) { request in .text("put \(request.parameters["id"] ?? "")") }
        router.patch("/items/:id", .inTask) { _ in .text("patched") }
        router.delete("/items/:id", .inTask) { _ in .text("deleted") }
        let client = try HTTPTestClient(router: router, mode: .inMemory)
        #expect(try client.execute(.put, "/items/7").text == "put 7")
        #expect(try client.execute(.patch, "/items/7").text == "patched")
        #expect(try client.execute(.delete, "/items/7").text == "deleted")
        for method in [HTTPRequest.Method.put, .patch, .delete] {
            guard case .async = try #require(found(router, method, path: "/items/7")).0 else {
                Issue.record("\(method) did not take the async form")
                continue
            }
        }
    }

    @Test func trailingSlashIsTheSamePath() {
        #expect(found(router, .get, path: "/hello/") != nil)
    }

    @Test func headFallsBackToTheGetRoute() {
        #expect(found(router, .head, path: "/hello") != nil)
    }

    @Test func unknownPathIs404OverTheWire() async throws {
        try await withServer { _, port in
            let client = try RawClient(port: port)
            let response = try client.exchange("GET /nope HTTP/1.1\r\nHost: t\r\n\r\n")
            #expect(response.status == 404)
        }
    }

    @Test func pathParameterReachesTheHandlerOverTheWire() async throws {
        try await withServer { _, port in
            let client = try RawClient(port: port)
            #expect(try client.exchange("GET /users/7?x=1 HTTP/1.1\r\nHost: t\r\n\r\n").text == "user 7")
        }
    }

    @Test func asyncHandlerRunsOnTheConnectionsLoop() async throws {
        try await withServer { _, port in
            let client = try RawClient(port: port)
            #expect(try client.exchange("GET /async HTTP/1.1\r\nHost: t\r\n\r\n").text == "async on loop: true")
        }
    }
}

/// The router's shortcut for literal routes keeps the scan's rule: the first route added that matches wins.
@Suite("Routing: literal shortcut")
struct LiteralShortcutTests {
    @Test func anEarlierParameterisedRouteStillWinsOverALaterLiteralOne() throws {
        var router = HTTPRouter()
        router.get("/users/:id") { _ in .text("by id") }
        router.get("/users/me") { _ in .text("me") }
        router.get("/about") { _ in .text("about") }
        router.get("/about") { _ in .text("second about") }
        let client = try HTTPTestClient(router: router)
        #expect(try client.execute(.get, "/users/me").text == "by id")
        #expect(try client.execute(.get, "/about").text == "about")
        #expect(try client.execute(.get, "/about/").text == "about")    // a trailing slash is the same path
        #expect(try client.execute(.get, "//about").text == "about")    // so is a doubled one
        #expect(try client.execute(.head, "/about").status == .ok)      // HEAD falls back to GET
        #expect(try client.execute(.post, "/about").status == .methodNotAllowed)
    }
}

/// The route `router.resolve` finds, or nil: the one public lookup, seen as a match.
func found(_ router: HTTPRouter, _ method: HTTPRequest.Method, path: Substring) -> (HTTPHandler, HTTPPathParameters)? {
    guard case .found(let handler, let parameters) = router.resolve(method, path: path) else { return nil }
    return (handler, parameters)
}
