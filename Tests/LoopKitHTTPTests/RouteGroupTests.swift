import HTTPTypes
import LoopKit
import LoopKitHTTPTesting
import Testing
@testable import LoopKitHTTP

/// Route groups: routes under a prefix with middleware of their own, inside the router's.
@Suite("Route groups")
struct RouteGroupTests {
    /// A middleware that records its name on the way in, out, and at the response's end.
    struct Tracing: HTTPMiddleware {
        let name: String
        let log: Recorder<String>

        func handleRequest(_ request: inout HTTPServerRequest) throws -> HTTPServerResponse? {
            log.record("\(name) in")
            return nil
        }

        func handleResponse(_ response: inout HTTPServerResponse, for request: HTTPServerRequest) {
            log.record("\(name) out")
            response.head.headerFields[HTTPField.Name("X-\(name)")!] = "1"
        }

        func responseEnded(_ summary: HTTPResponseSummary, for request: HTTPServerRequest) {
            log.record("\(name) ended \(summary.status?.code ?? 0)")
        }
    }

    static func router(log: Recorder<String>) -> HTTPRouter {
        var router = HTTPRouter()
        router.get("/open") { _ in .text("open") }
        router.group("/api") { api in
            api.use(Tracing(name: "api", log: log))
            api.get("/todos") { _ in .text("todos") }
            api.group("/v2") { v2 in
                v2.use(Tracing(name: "v2", log: log))
                v2.get("/todos/:id") { request in .text("v2 todo \(try request.parameters.require("id", as: Int.self))") }
            }
        }
        router.use(Tracing(name: "router", log: log))  // added after the groups: still outermost
        return router
    }

    @Test func aGroupsRoutesAreUnderItsPrefixOnly() throws {
        let client = try HTTPTestClient(router: Self.router(log: Recorder()))
        defer { client.shutDown() }
        #expect(try client.execute(.get, "/api/todos").text == "todos")
        #expect(try client.execute(.get, "/todos").status == .notFound)
        #expect(try client.execute(.get, "/api/v2/todos/7").text == "v2 todo 7")
    }

    @Test func aGroupsMiddlewareRunsForItsRoutesOnlyInsideTheRouters() throws {
        let log = Recorder<String>()
        let client = try HTTPTestClient(router: Self.router(log: log))
        defer { client.shutDown() }
        let open = try client.execute(.get, "/open")
        #expect(open.headerFields[HTTPField.Name("X-api")!] == nil)
        #expect(log.all == ["router in", "router out", "router ended 200"])
        log.removeAll()
        let grouped = try client.execute(.get, "/api/todos")
        #expect(grouped.headerFields[HTTPField.Name("X-api")!] == "1")
        #expect(grouped.headerFields[HTTPField.Name("X-router")!] == "1")
        #expect(log.all == ["router in", "api in", "api out", "router out", "api ended 200", "router ended 200"])
    }

    @Test func nestedGroupsWrapOutermostFirst() throws {
        let log = Recorder<String>()
        let client = try HTTPTestClient(router: Self.router(log: log))
        defer { client.shutDown() }
        _ = try client.execute(.get, "/api/v2/todos/1")
        #expect(log.all.filter { $0.hasSuffix(" in") } == ["router in", "api in", "v2 in"])
    }

    @Test func aGroupsMiddlewareMayAnswerEarlyForItsRoutesOnly() throws {
        var router = HTTPRouter()
        router.get("/public") { _ in .text("hi") }
        router.group("/admin") { admin in
            admin.use(before: { request in
                request.head.headerFields[.authorization] == nil ? .text("Unauthorized", status: .unauthorized) : nil
            })
            admin.get("/panel") { _ in .text("panel") }
        }
        let client = try HTTPTestClient(router: router)
        defer { client.shutDown() }
        #expect(try client.execute(.get, "/public").status == .ok)
        #expect(try client.execute(.get, "/admin/panel").status == .unauthorized)
        #expect(try client.execute(.get, "/admin/panel", headerFields: [.authorization: "Bearer x"]).text == "panel")
    }

    @Test func anAsyncMiddlewareInAGroupRunsItsRoutesAsTasks() throws {
        var router = HTTPRouter()
        router.group("/slow") { slow in
            slow.use { request, next in
                var response = try await next(request)
                response.head.headerFields[.cacheControl] = "no-store"
                return response
            }
            slow.get("/x") { _ in .text("x") }
        }
        router.get("/fast") { _ in .text("fast") }
        let client = try HTTPTestClient(router: router)
        defer { client.shutDown() }
        let slow = try client.execute(.get, "/slow/x")
        #expect(slow.text == "x")
        #expect(slow.headerFields[.cacheControl] == "no-store")
        #expect(try client.execute(.get, "/fast").headerFields[.cacheControl] == nil)
    }
}
