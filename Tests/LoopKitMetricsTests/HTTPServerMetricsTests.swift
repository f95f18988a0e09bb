import HTTPTypes
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
    func bodiesAreMeasuredAndActiveRequestsReturnToZero(mode: HTTPTestMode) throws {
        let metrics = TestMetrics()
        let client = try Self.client(metrics, mode: mode)
        #expect(try client.execute(.post, "/echo", body: Array("twelve bytes".utf8)).text == "twelve bytes")
        #expect(try metrics.expectRecorder(HTTPServerMetrics.Name.requestBodySize, [("http.request.method", "POST")]).lastValue == 12)
        #expect(try metrics.expectRecorder(HTTPServerMetrics.Name.responseBodySize,
                                           [("http.request.method", "POST"), ("http.response.status_code", "200")]).lastValue == 12)
        let active = try metrics.expectMeter(HTTPServerMetrics.Name.activeRequests)
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
