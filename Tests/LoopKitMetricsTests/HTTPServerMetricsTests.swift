import HTTPTypes
import LoopKit
import LoopKitHTTP
import LoopKitHTTPTesting
import LoopKitMetrics
import MetricsTestKit
import Testing

/// HTTP server metrics recorded by a test `MetricsFactory`, through the test client (both modes).
@Suite("HTTP server metrics")
struct HTTPServerMetricsTests {
    static func client(_ metrics: TestMetrics, mode: HTTPTestMode) throws -> HTTPTestClient {
        var configuration = HTTPServer.Configuration()
        HTTPServerMetrics.record(into: &configuration, factory: metrics)
        var router = HTTPRouter()
        router.use(HTTPServerMetrics.middleware(factory: metrics))
        router.use(before: { request in request.path == "/secret" ? .text("no", status: .unauthorized) : nil })
        router.get("/users/:id") { request in .text("user \(request.parameters["id"] ?? "?")") }
        router.post("/echo") { request in HTTPServerResponse(status: .ok, body: .bytes(request.body)) }
        return try HTTPTestClient(router: router, configuration: configuration, mode: mode)
    }

    @Test(arguments: HTTPTestMode.allCases)
    func requestsAreCountedByRouteStatusAndClass(mode: HTTPTestMode) throws {
        let metrics = TestMetrics()
        let client = try Self.client(metrics, mode: mode)
        #expect(try client.execute(.get, "/users/1").status == .ok)
        #expect(try client.execute(.get, "/users/2").status == .ok)
        #expect(try client.execute(.get, "/secret").status == .unauthorized)
        #expect(try client.execute(.get, "/nowhere").status == .notFound)
        try client.runUntilIdle()  // the counts reach the factory in the drain of the iteration that answered
        let ok = try metrics.expectTimer(HTTPServerMetrics.Name.requestDuration,
                                         [("http.request.method", "GET"), ("http.route", "/users/:id"), ("http.response.status_code", "200")])
        #expect(ok.values.count == 2)
        #expect(try metrics.expectCounter(HTTPServerMetrics.Name.requests,
                                          [("http.request.method", "GET"), ("http.response.status_class", "2xx")]).totalValue == 2)
        #expect(try metrics.expectCounter(HTTPServerMetrics.Name.requests,
                                          [("http.request.method", "GET"), ("http.response.status_class", "4xx")]).totalValue == 2)
        #expect(try metrics.expectTimer(HTTPServerMetrics.Name.requestDuration,
                                        [("http.request.method", "GET"), ("http.route", "unmatched"), ("http.response.status_code", "404")]).values.count == 1)
    }

    @Test(arguments: HTTPTestMode.allCases)
    func bodiesAreMeasured(mode: HTTPTestMode) throws {
        let metrics = TestMetrics()
        let client = try Self.client(metrics, mode: mode)
        #expect(try client.execute(.post, "/echo", body: Bytes("twelve bytes")).text == "twelve bytes")
        #expect(try metrics.expectRecorder(HTTPServerMetrics.Name.requestBodySize, [("http.request.method", "POST")]).lastValue == 12)
        #expect(try metrics.expectRecorder(HTTPServerMetrics.Name.responseBodySize,
                                           [("http.request.method", "POST"), ("http.response.status_code", "200")]).lastValue == 12)
    }

    @Test func anEmptyBodyAnnouncedByContentLengthIsRecordedAsZero() throws {
        let metrics = TestMetrics()
        let client = try Self.client(metrics, mode: .inMemory)
        try client.send("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n")
        #expect(try client.nextResponse().status == .ok)
        let sizes = try metrics.expectRecorder(HTTPServerMetrics.Name.requestBodySize, [("http.request.method", "POST")])
        #expect(sizes.values == [0])
    }

    @Test func aRequestWithoutABodyHasNoBodySize() throws {
        let metrics = TestMetrics()
        let client = try Self.client(metrics, mode: .inMemory)
        #expect(try client.execute(.get, "/users/1").status == .ok)
        #expect(throws: (any Error).self) {
            try metrics.expectRecorder(HTTPServerMetrics.Name.requestBodySize, [("http.request.method", "GET")])
        }
    }

    @Test func countsReachTheFactoryInTheDrainOfTheIterationThatAnsweredOncePerDimensionSet() throws {
        let metrics = TestMetrics()
        let seenByALaterJob = Lock<[Int64]>([])
        var router = HTTPRouter()
        router.use(HTTPServerMetrics.middleware(factory: metrics))
        router.get("/users/:id") { request in
            // Queued after the middleware queued its flush (at the request's start): runs after it, in the
            // same drain, by which time this request has ended too.
            try request.loop.enqueue {
                let total = metrics.counterTotal(label: HTTPServerMetrics.Name.requests)
                seenByALaterJob.withLock { $0.append(total) }
            }
            return .text("user")
        }
        let client = try HTTPTestClient(router: router)
        // Two pipelined requests, answered in the same iteration.
        try client.send("GET /users/1 HTTP/1.1\r\nHost: t\r\n\r\nGET /users/2 HTTP/1.1\r\nHost: t\r\n\r\n")
        #expect(try client.nextResponse().status == .ok)
        #expect(try client.nextResponse().status == .ok)
        try client.runUntilIdle()
        #expect(seenByALaterJob.withLock { $0 } == [2, 2])
        let requests = try metrics.expectCounter(HTTPServerMetrics.Name.requests,
                                                 [("http.request.method", "GET"), ("http.response.status_class", "2xx")])
        #expect(requests.values == [2])  // one increment for the iteration
        let durations = try metrics.expectTimer(HTTPServerMetrics.Name.requestDuration,
                                                [("http.request.method", "GET"), ("http.route", "/users/:id"), ("http.response.status_code", "200")])
        #expect(durations.values.count == 2)  // a histogram gets every value
    }

    @Test func activeRequestsCountTheRequestsStillOpenWhenAnIterationEnds() throws {
        let metrics = TestMetrics()
        var router = HTTPRouter()
        router.use(HTTPServerMetrics.middleware(factory: metrics))
        router.get("/now") { _ in .text("now") }
        router.get("/later", .inTask) { _ in
            await Task.yield()  // the rest of the handler runs in the next iteration
            return .text("later")
        }
        let client = try HTTPTestClient(router: router)
        #expect(try client.execute(.get, "/now").text == "now")
        try client.runUntilIdle()
        let active = try metrics.expectMeter(HTTPServerMetrics.Name.activeRequests)
        #expect(active.values.isEmpty)  // started and ended in one iteration: nothing to hand over
        #expect(try client.execute(.get, "/later").text == "later")
        try client.runUntilIdle()
        #expect(active.values == [1, 0])
    }

    @Test func openConnectionsFollowTheConnections() throws {
        let metrics = TestMetrics()
        let client = try Self.client(metrics, mode: .inMemory)
        #expect(try client.execute(.get, "/users/1").status == .ok)
        let open = try metrics.expectMeter(HTTPServerMetrics.Name.openConnections)
        #expect(open.lastValue == 1)
        try client.close()
        #expect(open.lastValue == 0)
    }
}
