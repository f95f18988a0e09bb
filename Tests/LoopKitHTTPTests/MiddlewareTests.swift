import HTTPTypes
import LoopKit
import LoopKitHTTPTesting
import Testing
@testable import LoopKitHTTP

/// Records where it ran, as `name>` on the way in and `<name` on the way out, in the response's
/// `X-Trace` field (so a test reads the order from the response itself).
struct TraceMiddleware: HTTPMiddleware {
    let name: String

    func handleRequest(_ request: inout HTTPServerRequest) throws -> HTTPServerResponse? {
        request.head.headerFields.append(HTTPField(name: .trace, value: name + ">"))
        return nil
    }

    func handleResponse(_ response: inout HTTPServerResponse, for request: HTTPServerRequest) {
        response.head.headerFields.append(HTTPField(name: .trace, value: "<" + name))
    }
}

extension HTTPField.Name {
    static let trace = HTTPField.Name("X-Trace")!
}

/// The order a request and its response went through, from the request fields the handler saw and the
/// response fields the middleware added.
func traceOrder(_ response: HTTPTestResponse) -> String {
    response.headerFields[values: .trace].joined(separator: " ")
}

/// A handler that answers with the trace the request carried.
let echoTrace: @Sendable (HTTPServerRequest) throws -> HTTPServerResponse = { request in
    var response = HTTPServerResponse.text("ok")
    for value in request.head.headerFields[values: .trace] { response.head.headerFields.append(HTTPField(name: .trace, value: value)) }
    response.head.headerFields.append(HTTPField(name: .trace, value: "handler"))
    return response
}

@Suite("Middleware")
struct MiddlewareTests {
    @Test(arguments: HTTPTestMode.allCases)
    func middlewareRunInTheOrderAddedOnTheWayInAndReversedOnTheWayOut(mode: HTTPTestMode) throws {
        var router = HTTPRouter()
        router.use(TraceMiddleware(name: "a"))
        router.get("/", echoTrace)  // a route added between middleware: every middleware applies to it
        router.use(TraceMiddleware(name: "b"))
        router.use { request, next in
            var request = request
            request.head.headerFields.append(HTTPField(name: .trace, value: "c>"))
            var response = try await next(request)
            response.head.headerFields.append(HTTPField(name: .trace, value: "<c"))
            return response
        }
        router.use(TraceMiddleware(name: "d"))
        let client = try HTTPTestClient(router: router, mode: mode)
        defer { client.shutDown() }
        #expect(traceOrder(try client.execute(.get, "/")) == "a> b> c> d> handler <d <c <b <a")
    }

    /// Live: the loop has a thread of its own (in memory, the test's task drives it).
    @Test func aSyncRouteBehindInlineMiddlewareRunsOutsideAnyTaskAndBehindAsyncMiddlewareInOne() throws {
        var router = HTTPRouter()
        router.use(TraceMiddleware(name: "a"))
        router.get("/") { _ in .text(withUnsafeCurrentTask { $0 == nil } ? "no task" : "task") }
        let inline = try HTTPTestClient(router: router, mode: .live)
        defer { inline.shutDown() }
        #expect(try inline.execute(.get, "/").text == "no task")
        router.use { request, next in try await next(request) }
        let async = try HTTPTestClient(router: router, mode: .live)
        defer { async.shutDown() }
        #expect(try async.execute(.get, "/").text == "task")
    }

    @Test(arguments: HTTPTestMode.allCases)
    func inlineMiddlewareAnswersEarlyWithoutTheHandlerOrLaterMiddleware(mode: HTTPTestMode) throws {
        let reached = Recorder<String>()
        var router = HTTPRouter()
        router.use(TraceMiddleware(name: "outer"))
        router.use(before: { request in
            request.head.headerFields[.authorization] == "Bearer ok" ? nil : .text("Unauthorized", status: .unauthorized)
        })
        router.use(before: { _ in
            reached.record("inner")
            return nil
        })
        router.get("/") { _ in
            reached.record("handler")
            return .text("secret")
        }
        let client = try HTTPTestClient(router: router, mode: mode)
        defer { client.shutDown() }
        let refused = try client.execute(.get, "/")
        #expect(refused.status == .unauthorized)
        #expect(traceOrder(refused) == "<outer")  // the outer middleware still sees the early answer
        #expect(reached.all.isEmpty)
        let allowed = try client.execute(.get, "/", headerFields: [.authorization: "Bearer ok"])
        #expect(allowed.text == "secret")
        #expect(reached.all == ["inner", "handler"])
    }

    @Test(arguments: HTTPTestMode.allCases)
    func asyncMiddlewareAnswersEarlyWithoutCallingNext(mode: HTTPTestMode) throws {
        let reached = Recorder<String>()
        var router = HTTPRouter()
        router.use { request, next in
            await Task.yield()
            guard request.query("token") == "ok" else { return .text("Forbidden", status: .forbidden) }
            return try await next(request)
        }
        router.get("/") { _ in
            reached.record("handler")
            return .text("secret")
        }
        let client = try HTTPTestClient(router: router, mode: mode)
        defer { client.shutDown() }
        #expect(try client.execute(.get, "/").status == .forbidden)
        #expect(reached.all.isEmpty)
        #expect(try client.execute(.get, "/?token=ok").text == "secret")
    }

    @Test func middlewareChangeTheResponseOnTheWayOut() throws {
        var router = HTTPRouter()
        router.use(after: { response, _ in response.head.headerFields[.server] = "LoopKit" })
        router.use { request, next in
            var response = try await next(request)
            response.head.status = .accepted
            return response
        }
        router.get("/") { _ in .text("ok") }
        let client = try HTTPTestClient(router: router)
        defer { client.shutDown() }
        let response = try client.execute(.get, "/")
        #expect(response.status == .accepted)
        #expect(response.headerFields[.server] == "LoopKit")
        #expect(response.text == "ok")
    }

    @Test(arguments: HTTPTestMode.allCases)
    func middlewareWrapAnAsyncRoute(mode: HTTPTestMode) throws {
        var router = HTTPRouter()
        router.use(TraceMiddleware(name: "a"))
        router.use { request, next in try await next(request) }
        router.get("/", .inTask) { request in
            await Task.yield()
            return try echoTrace(request)
        }
        let client = try HTTPTestClient(router: router, mode: mode)
        defer { client.shutDown() }
        #expect(traceOrder(try client.execute(.get, "/")) == "a> handler <a")
    }

    @Test(arguments: HTTPTestMode.allCases)
    func middlewareWrapAStreamingRouteAndCanRefuseItBeforeTheBody(mode: HTTPTestMode) throws {
        var router = HTTPRouter()
        router.use(TraceMiddleware(name: "a"))
        router.use(before: { request in request.query("deny") != nil ? .text("no", status: .forbidden) : nil })
        router.on(.post, "/count", bodyLimit: nil) { request, body in
            var count = 0
            for try await chunk in body { count += chunk.count }
            var response = HTTPServerResponse.text("\(count)")
            response.head.headerFields[values: .trace] = request.head.headerFields[values: .trace] + ["handler"]
            return response
        }
        let client = try HTTPTestClient(router: router, mode: mode)
        defer { client.shutDown() }
        let counted = try client.execute(.post, "/count", body: Bytes(Array(repeating: 7, count: 100_000)))
        #expect(counted.text == "100000")
        #expect(traceOrder(counted) == "a> handler <a")
        let refused = try client.execute(.post, "/count?deny", body: Bytes(Array(repeating: 7, count: 10)))
        #expect(refused.status == .forbidden)
        #expect(traceOrder(refused) == "<a")
    }

    @Test(arguments: HTTPTestMode.allCases)
    func middlewareWrapACallbackStreamingRoute(mode: HTTPTestMode) throws {
        var router = HTTPRouter()
        router.use(TraceMiddleware(name: "a"))
        router.use { request, next in try await next(request) }
        router.on(.post, "/count", bodyLimit: nil) { request, body, responder in
            var count = 0
            body.read({ count += $0.count }, onEnd: { _ in responder.send(.text("\(count)")) })
        }
        let client = try HTTPTestClient(router: router, mode: mode)
        defer { client.shutDown() }
        let counted = try client.execute(.post, "/count", body: Bytes(Array(repeating: 7, count: 50_000)))
        #expect(counted.text == "50000")
        #expect(traceOrder(counted) == "<a")
        #expect(try client.execute(.post, "/count", body: [1, 2, 3]).text == "3")  // the connection goes on
    }

    @Test(arguments: HTTPTestMode.allCases)
    func middlewareSeeRequestsNoRouteTakes(mode: HTTPTestMode) throws {
        var router = HTTPRouter()
        router.use(TraceMiddleware(name: "a"))
        router.get("/here") { _ in .text("here") }
        let client = try HTTPTestClient(router: router, mode: mode)
        defer { client.shutDown() }
        let missing = try client.execute(.get, "/missing")
        #expect(missing.status == .notFound)
        #expect(traceOrder(missing) == "<a")
        let wrongMethod = try client.execute(.delete, "/here")
        #expect(wrongMethod.status == .methodNotAllowed)
        #expect(traceOrder(wrongMethod) == "<a")
    }

    @Test func anErrorSkipsTheWayOutOfInlineMiddlewareAndIsAnswered500() throws {
        struct Failure: Error {}
        let summaries = Recorder<Int?>()
        struct Observer: HTTPMiddleware {
            let summaries: Recorder<Int?>
            func responseEnded(_ summary: HTTPResponseSummary, for request: HTTPServerRequest) {
                summaries.record(summary.status?.code)
            }
        }
        var router = HTTPRouter()
        router.use(Observer(summaries: summaries))
        router.use(TraceMiddleware(name: "a"))
        router.get("/") { _ in throw Failure() }
        let client = try HTTPTestClient(router: router)
        defer { client.shutDown() }
        let response = try client.execute(.get, "/")
        #expect(response.status == .internalServerError)
        #expect(traceOrder(response) == "")
        #expect(summaries.all == [500])
    }

    @Test func asyncMiddlewareCatchTheErrorsOfTheRestOfTheChain() throws {
        struct NotFound: Error {}
        var router = HTTPRouter()
        router.use { request, next in
            do {
                return try await next(request)
            } catch is NotFound {
                return .text("no such thing", status: .notFound)
            }
        }
        router.get("/thing") { _ in throw NotFound() }
        let client = try HTTPTestClient(router: router)
        defer { client.shutDown() }
        let response = try client.execute(.get, "/thing")
        #expect(response.status == .notFound)
        #expect(response.text == "no such thing")
    }

    @Test(arguments: HTTPTestMode.allCases)
    func responseEndedGetsTheFinalStatusBytesAndStartOfEveryResponse(mode: HTTPTestMode) async throws {
        struct Observer: HTTPMiddleware {
            let summaries: Recorder<HTTPResponseSummary>
            func responseEnded(_ summary: HTTPResponseSummary, for request: HTTPServerRequest) { summaries.record(summary) }
        }
        let summaries = Recorder<HTTPResponseSummary>()
        var router = HTTPRouter()
        router.use(Observer(summaries: summaries))
        router.use(after: { response, _ in response.head.status = .created })  // the observer sees the final status
        router.get("/bytes") { _ in .text("12345") }
        router.get("/stream") { _ in
            HTTPServerResponse(status: .ok, body: .stream { writer in
                try await writer.write(Array(repeating: 1, count: 3000))
                try await writer.write(Array(repeating: 2, count: 4000))
            })
        }
        // Timeouts a starved test task cannot reach between its two awaits (a full parallel run).
        var configuration = HTTPServer.Configuration()
        configuration.headTimeout = .seconds(600)
        configuration.idleTimeout = .seconds(600)
        let client = try HTTPTestClient(router: router, configuration: configuration, mode: mode)
        defer { client.shutDown() }
        let before = ContinuousClock.now
        _ = try await client.execute(.get, "/bytes")
        _ = try await client.execute(.get, "/stream")
        // Live, the last chunk goes out as it is written, and the hook runs right after: the client may read
        // the end of the response first.
        try #require(try await eventually { summaries.all.count == 2 })
        let all = summaries.all
        #expect(all.map { $0.status } == [.created, .created])
        #expect(all.map(\.bodyBytes) == [5, 7000])
        #expect(all.allSatisfy { $0.isComplete && $0.startTime >= before && $0.endTime >= $0.startTime })
    }

    @Test func webSocketUpgradeGoesThroughMiddlewareWhichMayRefuseItOrAddFields() async throws {
        var router = webSocketTestRouter()
        router.use { request, next in
            var response = try await next(request)
            response.head.headerFields[.server] = "LoopKit"
            return response
        }
        router.use(before: { request in request.query("token") == "ok" ? nil : .text("Unauthorized", status: .unauthorized) })
        try await withServer(router: router) { (_: HTTPServer, port: Int) async throws in
            let refused = try WebSocketClient(port: port, path: "/ws/echo", expectUpgrade: false)
            #expect(refused.response.status == 401)
            #expect(refused.response.field("Server") == "LoopKit")
            let client = try WebSocketClient(port: port, path: "/ws/echo?token=ok")
            #expect(client.response.field("Server") == "LoopKit")
            #expect(client.response.field("X-Request-ID") != nil)
            client.sendText("hello")
            let frame = try #require(try client.readFrame())
            #expect(frame.payload == Array("hello".utf8))
        }
    }
}
