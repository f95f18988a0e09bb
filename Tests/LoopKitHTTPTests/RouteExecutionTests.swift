import HTTPTypes
import LoopKit
import LoopKitHTTPTesting
import Synchronization
import Testing
@testable import LoopKitHTTP

/// Whether a route's handler runs inline on the loop or in a task is said where the route is added: the
/// plain form (or `.inline`) runs inline, inside the read callback; `.inTask` runs as a task on the loop.
///
/// The compile-time rule (an unmarked async closure picks a deprecated form, whose warning names `.inTask`,
/// and `.inline` with an async closure does not compile) cannot be a test that runs; it is described on
/// ``HTTPTaskExecution`` and checked by the build, which has no warnings.
@Suite("Route execution: inline or in a task")
struct RouteExecutionTests {
    /// What the handler saw: whether it ran in a task, and on the connection's loop.
    static func whereItRan(_ request: HTTPServerRequest) -> HTTPServerResponse {
        let inTask = withUnsafeCurrentTask { $0 != nil }
        return .text("\(inTask ? "task" : "no task"), on loop: \(request.loop.isCurrent)")
    }

    /// The handler kind a route resolved to, for the request.
    static func kind(_ router: HTTPRouter, _ method: HTTPRequest.Method, _ path: Substring) -> String {
        switch router.resolve(method, path: path) {
        case .found(.sync, _): "inline"
        case .found(.async, _): "task"
        case .found(.webSocket(let route), _):
            switch route.handler {
            case .callback: "webSocket inline"
            case .async: "webSocket task"
            case .accepted: "webSocket accepted"
            }
        case .found: "other"
        default: "none"
        }
    }

    /// The methods with routes of their own: `get`, `post`, `put`, `patch`, `delete`, and `on(_:_:_:)`.
    enum Adder: String, CaseIterable, CustomTestStringConvertible {
        case get, post, put, patch, delete, on

        var method: HTTPRequest.Method {
            switch self {
            case .get: .get
            case .post: .post
            case .put: .put
            case .patch: .patch
            case .delete: .delete
            case .on: .options
            }
        }

        var testDescription: String { rawValue }

        /// Adds `/plain` and `/inline` (inline) and `/task` (in a task) with this adder's three forms.
        func addRoutes(to router: inout HTTPRouter) {
            let ran: @Sendable (HTTPServerRequest) throws -> HTTPServerResponse = { RouteExecutionTests.whereItRan($0) }
            switch self {
            case .get:
                router.get("/plain") { request in RouteExecutionTests.whereItRan(request) }
                router.get("/inline", .inline, ran)
                router.get("/task", .inTask) { request in await Task.yield(); return RouteExecutionTests.whereItRan(request) }
            case .post:
                router.post("/plain") { request in RouteExecutionTests.whereItRan(request) }
                router.post("/inline", .inline, ran)
                router.post("/task", .inTask) { request in await Task.yield(); return RouteExecutionTests.whereItRan(request) }
            case .put:
                router.put("/plain") { request in RouteExecutionTests.whereItRan(request) }
                router.put("/inline", .inline, ran)
                router.put("/task", .inTask) { request in await Task.yield(); return RouteExecutionTests.whereItRan(request) }
            case .patch:
                router.patch("/plain") { request in RouteExecutionTests.whereItRan(request) }
                router.patch("/inline", .inline, ran)
                router.patch("/task", .inTask) { request in await Task.yield(); return RouteExecutionTests.whereItRan(request) }
            case .delete:
                router.delete("/plain") { request in RouteExecutionTests.whereItRan(request) }
                router.delete("/inline", .inline, ran)
                router.delete("/task", .inTask) { request in await Task.yield(); return RouteExecutionTests.whereItRan(request) }
            case .on:
                router.on(.options, "/plain") { request in RouteExecutionTests.whereItRan(request) }
                router.on(.options, "/inline", .inline, ran)
                router.on(.options, "/task", .inTask) { request in await Task.yield(); return RouteExecutionTests.whereItRan(request) }
            }
        }
    }

    /// Live: the loop has a thread of its own, so "no task" means the handler ran outside any task (in
    /// memory the test's own task drives the loop).
    @Test(arguments: Adder.allCases)
    func everyMethodRunsItsPlainAndInlineFormsInlineAndItsTaskFormAsATaskOnTheLoop(adder: Adder) throws {
        var router = HTTPRouter()
        adder.addRoutes(to: &router)
        #expect(Self.kind(router, adder.method, "/plain") == "inline")
        #expect(Self.kind(router, adder.method, "/inline") == "inline")
        #expect(Self.kind(router, adder.method, "/task") == "task")
        let client = try HTTPTestClient(router: router, mode: .live)
        defer { client.shutDown() }
        #expect(try client.execute(adder.method, "/plain").text == "no task, on loop: true")
        #expect(try client.execute(adder.method, "/inline").text == "no task, on loop: true")
        #expect(try client.execute(adder.method, "/task").text == "task, on loop: true")
    }

    /// In memory, step by step (the same bytes, read in the same first step): an inline route's handler
    /// runs in the step that reads the request, inside the read callback; a task route's starts a step
    /// later, even when it never awaits. Each answer reaches the client one step after its handler ran.
    @Test func anInlineRouteAnswersInTheStepThatReadsItsRequestAndATaskRouteInALaterOne() throws {
        let step = Atomic<Int>(0)
        let ranAt = Lock<[String: Int]>([:])
        var router = HTTPRouter()
        router.get("/inline") { _ in
            ranAt.withLock { $0["inline"] = step.load(ordering: .relaxed) }
            return .text("inline")
        }
        router.get("/task", .inTask) { _ in
            ranAt.withLock { $0["task"] = step.load(ordering: .relaxed) }
            return .text("task")
        }
        var answeredAfter: [String: Int] = [:]
        for path in ["inline", "task"] {
            let client = try HTTPTestClient(router: router)
            defer { client.shutDown() }
            try client.send("GET /\(path) HTTP/1.1\r\nHost: t\r\n\r\n")
            step.store(0, ordering: .relaxed)
            while client.receivedText.isEmpty, try client.step() { step.add(1, ordering: .relaxed) }
            #expect(client.receivedText.hasSuffix(path))
            answeredAfter[path] = step.load(ordering: .relaxed)
        }
        #expect(ranAt.withLock { $0 } == ["inline": 0, "task": 1])
        #expect(answeredAfter == ["inline": 2, "task": 3])
    }

    /// In memory: a task route's handler may await something outside the loop (here a gate the test
    /// opens); nothing is answered while it waits, and its answer arrives once it resumes.
    @Test func aTaskRouteMayAwaitAndItsAnswerArrivesWhenItResumes() throws {
        let gate = Gate()
        var router = HTTPRouter()
        router.get("/gate", .inTask) { _ in
            await gate.wait()
            return .text("opened")
        }
        let client = try HTTPTestClient(router: router)
        defer { client.shutDown() }
        try client.send("GET /gate HTTP/1.1\r\nHost: t\r\n\r\n")
        try client.runUntilIdle()
        #expect(gate.arrivals == 1)
        #expect(client.receivedText.isEmpty)
        gate.open()
        #expect(try client.nextResponse().text == "opened")
    }

    /// `.inTask` with a synchronous closure: the call site says task, so a task it is.
    @Test func aSynchronousClosureMarkedInTaskRunsAsATask() throws {
        var router = HTTPRouter()
        router.get("/task", .inTask) { request in RouteExecutionTests.whereItRan(request) }
        #expect(Self.kind(router, .get, "/task") == "task")
        let client = try HTTPTestClient(router: router, mode: .live)
        defer { client.shutDown() }
        #expect(try client.execute(.get, "/task").text == "task, on loop: true")
    }

    @Test func aGroupTakesBothFormsUnderItsPrefixAndMiddleware() throws {
        var router = HTTPRouter()
        router.group("/api") { api in
            api.use(after: { response, _ in response.head.headerFields[.cacheControl] = "no-store" })
            api.get("/inline") { request in RouteExecutionTests.whereItRan(request) }
            api.put("/task", .inTask) { request in await Task.yield(); return RouteExecutionTests.whereItRan(request) }
        }
        #expect(Self.kind(router, .get, "/api/inline") == "inline")
        #expect(Self.kind(router, .put, "/api/task") == "task")
        let client = try HTTPTestClient(router: router, mode: .live)
        defer { client.shutDown() }
        let inline = try client.execute(.get, "/api/inline")
        #expect(inline.text == "no task, on loop: true")
        #expect(inline.headerFields[.cacheControl] == "no-store")
        let task = try client.execute(.put, "/api/task")
        #expect(task.text == "task, on loop: true")
        #expect(task.headerFields[.cacheControl] == "no-store")
    }

    @Test func aWebSocketRouteRunsInATaskOnlyWhenMarkedInTask() throws {
        var router = HTTPRouter()
        router.webSocket("/callbacks") { _, socket in socket.onMessage { _ in } }
        router.webSocket("/inline", .inline) { _, socket in socket.onMessage { _ in } }
        router.webSocket("/task", .inTask) { _, socket in
            for try await message in socket.messages { try await socket.send(message) }
        }
        #expect(Self.kind(router, .get, "/callbacks") == "webSocket inline")
        #expect(Self.kind(router, .get, "/inline") == "webSocket inline")
        #expect(Self.kind(router, .get, "/task") == "webSocket task")
        let socket = try HTTPTestClient(router: router).webSocket("/task")
        try socket.send("echo")
        #expect(try socket.receive() == .text("echo"))
    }
}
