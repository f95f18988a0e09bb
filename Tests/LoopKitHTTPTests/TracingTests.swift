import HTTPTypes
import LoopKitHTTPTesting
import Testing
import Tracing
@testable import LoopKitHTTP

/// The tracer is injected through ``HTTPServer/Configuration/tracer``: the process-wide
/// `InstrumentationSystem` can be bootstrapped once only, and suites run in parallel.
@Suite("Request tracing")
struct TracingTests {
    static let traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
    static let parentID = "00f067aa0ba902b7"

    func tracedClient(_ tracer: TestTracer, mode: HTTPTestMode = .inMemory) throws -> HTTPTestClient {
        var configuration = HTTPServer.Configuration()
        configuration.tracer = tracer
        var router = HTTPRouter()
        router.get("/users/:id") { request in  // answers with the context it was given, as a client call would carry it
            var response = HTTPServerResponse.text("user")
            tracer.inject(request.serviceContext, into: &response.head.headerFields, using: HTTPFieldsInjector())
            return response
        }
        router.get("/fail") { _ in .text("down", status: .serviceUnavailable) }
        return try HTTPTestClient(router: router, configuration: configuration, mode: mode)
    }

    @Test(arguments: HTTPTestMode.allCases)
    func traceParentRoundTripsThroughAServerSpan(mode: HTTPTestMode) throws {
        let tracer = TestTracer()
        let client = try tracedClient(tracer, mode: mode)
        defer { client.shutDown() }
        let response = try client.execute(.get, "/users/7?x=1", headerFields: [
            HTTPField.Name("traceparent")!: "00-\(Self.traceID)-\(Self.parentID)-01",
            HTTPField.Name("tracestate")!: "vendor=abc",
        ])
        let spans = tracer.ended.all
        try #require(spans.count == 1)
        let span = spans[0]
        #expect(span.operationName == "GET /users/:id")
        #expect(span.kind == .server)
        #expect(span.parent == TestTrace(traceID: Self.traceID, spanID: Self.parentID, state: "vendor=abc"))
        #expect(span.trace.traceID == Self.traceID)
        // The handler's context is the server span's: what it passes on names the span as parent.
        #expect(response.headerFields[HTTPField.Name("traceparent")!] == "00-\(Self.traceID)-\(span.trace.spanID)-01")
        #expect(response.headerFields[HTTPField.Name("tracestate")!] == "vendor=abc")
        #expect(span.attributes.get("http.request.method") == .string("GET"))
        #expect(span.attributes.get("url.path") == .string("/users/7"))
        #expect(span.attributes.get("http.route") == .string("/users/:id"))
        #expect(span.attributes.get("url.scheme") == .string("http"))
        #expect(span.attributes.get("http.response.status_code") == .int64(200))
        #expect(span.status == nil)
    }

    @Test func aMalformedTraceParentGivesAFreshContext() throws {
        let tracer = TestTracer()
        let client = try tracedClient(tracer)
        defer { client.shutDown() }
        _ = try client.execute(.get, "/users/7", headerFields: [
            HTTPField.Name("traceparent")!: "00-\(Self.traceID.uppercased())-\(Self.parentID)-01",
            HTTPField.Name("tracestate")!: "vendor=abc",
        ])
        let span = try #require(tracer.ended.all.first)
        #expect(span.parent == nil)
        #expect(span.trace.traceID != Self.traceID)
        #expect(span.trace.state == nil)
    }

    @Test func aServerErrorMarksTheSpanAndAnUnroutedRequestIsNamedByItsMethod() throws {
        let tracer = TestTracer()
        let client = try tracedClient(tracer)
        defer { client.shutDown() }
        _ = try client.execute(.get, "/fail")
        _ = try client.execute(.get, "/nowhere")
        let spans = tracer.ended.all
        try #require(spans.count == 2)
        #expect(spans[0].status == SpanStatus(code: .error))
        #expect(spans[0].attributes.get("http.response.status_code") == .int64(503))
        #expect(spans[1].operationName == "GET")
        #expect(spans[1].attributes.get("http.route") == nil)
        #expect(spans[1].attributes.get("http.response.status_code") == .int64(404))
    }

    @Test func aSpanEndsWhenTheClientLeavesBeforeTheResponse() throws {
        let tracer = TestTracer()
        var configuration = HTTPServer.Configuration()
        configuration.tracer = tracer
        var router = HTTPRouter()
        router.get("/slow", .inTask) { _ in
            try await Task.sleep(for: .seconds(3600))
            return .text("late")
        }
        let client = try HTTPTestClient(router: router, configuration: configuration)
        defer { client.shutDown() }
        try client.send("GET /slow HTTP/1.1\r\nHost: t\r\n\r\n")
        try client.runUntilIdle()
        #expect(tracer.ended.all.isEmpty)
        try client.close()
        #expect(tracer.ended.all.count == 1)
        #expect(tracer.ended.all.first?.attributes.get("http.response.status_code") == nil)
    }

    @Test func withoutATracerRequestsGetATopLevelContext() throws {
        var router = HTTPRouter()
        router.get("/") { request in .text(request.serviceContext.count == 0 ? "empty" : "not empty") }
        let client = try HTTPTestClient(router: router)
        defer { client.shutDown() }
        #expect(try client.execute(.get, "/", headerFields: [
            HTTPField.Name("traceparent")!: "00-\(Self.traceID)-\(Self.parentID)-01",
        ]).text == "empty")
    }

    @Test(arguments: [
        ("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", true),
        ("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-later", true),
        ("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra", false),
        ("ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", false),
        ("00-00000000000000000000000000000000-00f067aa0ba902b7-01", false),
        ("00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", false),
        ("00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01", false),
        ("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7", false),
        ("garbage", false),
    ])
    func traceParentIsCheckedAsW3CWritesIt(value: String, valid: Bool) {
        #expect(HTTPTraceCarrier.isValidTraceParent(value) == valid)
    }
}
