import HTTPTypes
import Logging
import LoopKit
import LoopKitHTTP
import LoopKitHTTPClient
import LoopKitMetrics
import LoopKitNet
import MetricsTestKit
import Synchronization
import Testing

/// HTTP client metrics recorded by a test `MetricsFactory`: from summaries given to the hook (what each field
/// becomes), and from a client's requests to a server on 127.0.0.1.
@Suite("HTTP client metrics")
struct HTTPClientMetricsTests {
    /// The hook `HTTPClientMetrics.record(into:)` sets.
    static func hook(_ metrics: TestMetrics, server: HTTPClientMetrics.ServerDimension = .omitted)
        -> @Sendable (HTTPClientRequestSummary) -> Void
    {
        var configuration = HTTPClient.Configuration()
        HTTPClientMetrics.record(into: &configuration, server: server, factory: metrics)
        return configuration.requestEnded!
    }

    static func ok(_ method: HTTPRequest.Method = .get, _ status: HTTPResponse.Status = .ok, authority: String = "api.example.com") -> HTTPClientRequestSummary {
        HTTPClientRequestSummary(method: method, authority: authority, status: status, duration: .milliseconds(3),
                                 responseBodyBytes: 5, connectionsOpened: 0, wasSent: true)
    }

    @Test func requestsAreCountedByMethodAndStatusClassAndTimedByStatusCode() throws {
        let metrics = TestMetrics()
        let record = Self.hook(metrics)
        record(Self.ok())
        record(Self.ok())
        record(Self.ok(.get, .notFound))
        record(Self.ok(.post, .created))
        #expect(try metrics.expectCounter(HTTPClientMetrics.Name.requests,
                                          [("http.request.method", "GET"), ("http.response.status_class", "2xx")]).totalValue == 2)
        #expect(try metrics.expectCounter(HTTPClientMetrics.Name.requests,
                                          [("http.request.method", "GET"), ("http.response.status_class", "4xx")]).totalValue == 1)
        #expect(try metrics.expectCounter(HTTPClientMetrics.Name.requests,
                                          [("http.request.method", "POST"), ("http.response.status_class", "2xx")]).totalValue == 1)
        let durations = try metrics.expectTimer(HTTPClientMetrics.Name.requestDuration,
                                                [("http.request.method", "GET"), ("http.response.status_code", "200")])
        #expect(durations.values == [3_000_000, 3_000_000])
    }

    @Test func aFailureWithoutAResponseIsCountedUnderNoneAndByItsKind() throws {
        let metrics = TestMetrics()
        let record = Self.hook(metrics)
        record(HTTPClientRequestSummary(method: .get, authority: "down.example.com", error: HTTPClientError(.connectFailed, "refused")))
        record(HTTPClientRequestSummary(method: .get, authority: "slow.example.com", error: HTTPClientError(.deadlineExceeded, "late")))
        record(HTTPClientRequestSummary(method: .get, authority: "slow.example.com", error: HTTPClientError(.deadlineExceeded, "late")))
        #expect(try metrics.expectCounter(HTTPClientMetrics.Name.requests,
                                          [("http.request.method", "GET"), ("http.response.status_class", "none")]).totalValue == 3)
        #expect(try metrics.expectCounter(HTTPClientMetrics.Name.errors, [("error.type", "connectFailed")]).totalValue == 1)
        #expect(try metrics.expectCounter(HTTPClientMetrics.Name.errors, [("error.type", "deadlineExceeded")]).totalValue == 2)
        #expect(try metrics.expectTimer(HTTPClientMetrics.Name.requestDuration,
                                        [("http.request.method", "GET"), ("http.response.status_code", "none")]).values.count == 3)
    }

    @Test func aFailureAfterTheHeadIsCountedUnderItsStatusAndAsAnError() throws {
        let metrics = TestMetrics()
        let record = Self.hook(metrics)
        var summary = Self.ok()
        summary.error = HTTPClientError(.decompressionLimitExceeded, "bomb")
        record(summary)
        #expect(try metrics.expectCounter(HTTPClientMetrics.Name.requests,
                                          [("http.request.method", "GET"), ("http.response.status_class", "2xx")]).totalValue == 1)
        #expect(try metrics.expectCounter(HTTPClientMetrics.Name.errors, [("error.type", "decompressionLimitExceeded")]).totalValue == 1)
    }

    @Test func bodiesAreMeasuredEachWay() throws {
        let metrics = TestMetrics()
        let record = Self.hook(metrics)
        var posted = Self.ok(.post)
        posted.requestBodyBytes = 12
        posted.responseBodyBytes = 7
        record(posted)
        record(Self.ok())
        #expect(try metrics.expectRecorder(HTTPClientMetrics.Name.requestBodySize, [("http.request.method", "POST")]).values == [12])
        #expect(try metrics.expectRecorder(HTTPClientMetrics.Name.responseBodySize,
                                           [("http.request.method", "POST"), ("http.response.status_code", "200")]).values == [7])
        #expect(try metrics.expectRecorder(HTTPClientMetrics.Name.responseBodySize,
                                           [("http.request.method", "GET"), ("http.response.status_code", "200")]).values == [5])
        // A GET sent no body: it has no request body size.
        #expect(try metrics.expectRecorder(HTTPClientMetrics.Name.requestBodySize, [("http.request.method", "GET")]).values == [])
    }

    @Test func retriesAndConnectionsOpenedOrReusedAreCounted() throws {
        let metrics = TestMetrics()
        let record = Self.hook(metrics)
        var fresh = Self.ok()
        fresh.connectionsOpened = 1
        record(fresh)
        record(Self.ok())
        record(Self.ok())
        var retried = Self.ok()
        retried.retries = 1
        retried.connectionsOpened = 1
        record(retried)
        #expect(try metrics.expectCounter(HTTPClientMetrics.Name.connections, [("http.connection.state", "opened")]).totalValue == 2)
        #expect(try metrics.expectCounter(HTTPClientMetrics.Name.connections, [("http.connection.state", "reused")]).totalValue == 2)
        #expect(try metrics.expectCounter(HTTPClientMetrics.Name.retries).totalValue == 1)
    }

    @Test func theServerIsNoDimensionByDefault() throws {
        let metrics = TestMetrics()
        Self.hook(metrics)(Self.ok())
        #expect(throws: (any Error).self) {
            try metrics.expectCounter(HTTPClientMetrics.Name.requests, [
                ("http.request.method", "GET"), ("http.response.status_class", "2xx"), ("server.address", "api.example.com"),
            ])
        }
    }

    @Test func namedServersKeepTheirHostAndOthersAreOther() throws {
        let metrics = TestMetrics()
        let record = Self.hook(metrics, server: .named(["api.example.com"]))
        record(Self.ok(authority: "API.example.com:443"))
        record(Self.ok(authority: "one.example.net"))
        record(Self.ok(authority: "two.example.net:8080"))
        let dimensions = [("http.request.method", "GET"), ("http.response.status_class", "2xx")]
        #expect(try metrics.expectCounter(HTTPClientMetrics.Name.requests, dimensions + [("server.address", "api.example.com")]).totalValue == 1)
        #expect(try metrics.expectCounter(HTTPClientMetrics.Name.requests, dimensions + [("server.address", "other")]).totalValue == 2)
    }

    @Test func everyServerIsItsHostWithoutThePort() throws {
        let metrics = TestMetrics()
        let record = Self.hook(metrics, server: .every)
        record(Self.ok(authority: "[::1]:8080"))
        record(Self.ok(authority: "127.0.0.1:9000"))
        #expect(try metrics.expectCounter(HTTPClientMetrics.Name.retries, [("server.address", "::1")]).totalValue == 0)
        #expect(try metrics.expectCounter(HTTPClientMetrics.Name.connections,
                                          [("http.connection.state", "reused"), ("server.address", "127.0.0.1")]).totalValue == 1)
    }

    @Test func methodsOutsideTheStandardOnesAreCountedAsOther() throws {
        let metrics = TestMetrics()
        Self.hook(metrics)(Self.ok(HTTPRequest.Method("PROPFIND")!))
        #expect(try metrics.expectCounter(HTTPClientMetrics.Name.requests,
                                          [("http.request.method", "_OTHER"), ("http.response.status_class", "2xx")]).totalValue == 1)
    }

    @Test func aHookSetBeforeIsStillCalled() throws {
        let metrics = TestMetrics()
        let earlier = Mutex(0)
        var configuration = HTTPClient.Configuration()
        configuration.requestEnded = { _ in earlier.withLock { $0 += 1 } }
        HTTPClientMetrics.record(into: &configuration, factory: metrics)
        configuration.requestEnded?(Self.ok())
        #expect(earlier.withLock { $0 } == 1)
        #expect(metrics.counterTotal(label: HTTPClientMetrics.Name.requests) == 1)
    }

    @Test func aClientsRequestsToAServerAreRecorded() async throws {
        let metrics = TestMetrics()
        var router = HTTPRouter()
        router.get("/hello") { _ in .text("hello") }
        router.post("/echo") { request in HTTPServerResponse(status: .ok, body: .bytes(request.body)) }
        var serverConfiguration = HTTPServer.Configuration()
        serverConfiguration.host = "127.0.0.1"
        serverConfiguration.port = 0
        var logger = Logger(label: "test.client-metrics.server")
        logger.logLevel = .critical
        let serverGroup = try LoopGroup(threads: 1, name: "client-metrics-server")
        let server = HTTPServer(group: serverGroup, configuration: serverConfiguration, router: router, logger: logger)
        let port = try server.start()
        let clientGroup = try LoopGroup(threads: 1, name: "client-metrics-client")
        defer {
            server.beginShutdown()
            serverGroup.shutdown()
            clientGroup.shutdown()
        }
        var configuration = HTTPClient.Configuration()
        HTTPClientMetrics.record(into: &configuration, factory: metrics)
        let client = HTTPClient(on: clientGroup.loops[0], configuration: configuration)
        let authority = "127.0.0.1:\(port)"
        _ = try await client.execute(HTTPRequest(method: .get, scheme: "http", authority: authority, path: "/hello")).collect(upTo: 1024)
        _ = try await client.execute(HTTPRequest(method: .get, scheme: "http", authority: authority, path: "/missing")).collect(upTo: 1024)
        let echoed = try await client.execute(HTTPRequest(method: .post, scheme: "http", authority: authority, path: "/echo"),
                                              body: .bytes(Bytes("twelve bytes")))
        #expect(try await echoed.collect(upTo: 1024).count == 12)
        #expect(try metrics.expectCounter(HTTPClientMetrics.Name.requests,
                                          [("http.request.method", "GET"), ("http.response.status_class", "2xx")]).totalValue == 1)
        #expect(try metrics.expectCounter(HTTPClientMetrics.Name.requests,
                                          [("http.request.method", "GET"), ("http.response.status_class", "4xx")]).totalValue == 1)
        #expect(try metrics.expectRecorder(HTTPClientMetrics.Name.requestBodySize, [("http.request.method", "POST")]).values == [12])
        #expect(try metrics.expectRecorder(HTTPClientMetrics.Name.responseBodySize,
                                           [("http.request.method", "GET"), ("http.response.status_code", "200")]).values == [5])
        #expect(try metrics.expectCounter(HTTPClientMetrics.Name.connections, [("http.connection.state", "opened")]).totalValue == 1)
        #expect(try metrics.expectCounter(HTTPClientMetrics.Name.connections, [("http.connection.state", "reused")]).totalValue == 2)
        #expect(metrics.counterTotal(label: HTTPClientMetrics.Name.errors) == 0)
        client.shutdown()
    }
}
