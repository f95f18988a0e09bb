import HTTPTypes
import LoopKit
import LoopKitHTTP
import LoopKitHTTPClient
import LoopKitHTTPTesting
import LoopKitMetrics
import LoopKitTesting
import MetricsTestKit
import Testing

/// Every metric has a description for a backend's help text (Prometheus's `# HELP`).
@Suite("Metric descriptions")
struct MetricDescriptionsTests {
    @Test func everyLoopMetricHasADescription() throws {
        let metrics = TestMetrics()
        let driver = try LoopDriver()
        try LoopMetrics.record(driver.loop, name: "main", factory: metrics)
        let labels = Set(metrics.counters.map(\.label) + metrics.recorders.map(\.label) + metrics.timers.map(\.label))
        #expect(labels.count == 8)
        #expect(labels == Set(LoopMetrics.descriptions.keys))
        #expect(LoopMetrics.descriptions.values.allSatisfy { $0.count > 10 })
    }

    @Test func everyHTTPServerMetricHasADescription() throws {
        let metrics = TestMetrics()
        let client = try HTTPServerMetricsTests.client(metrics, mode: .inMemory)
        #expect(try client.execute(.post, "/echo", body: Bytes("body")).status == .ok)
        try client.runUntilIdle()
        let labels = Set(metrics.counters.map(\.label) + metrics.meters.map(\.label) + metrics.recorders.map(\.label)
                         + metrics.timers.map(\.label))
        #expect(labels.count == 6)
        #expect(labels == Set(HTTPServerMetrics.descriptions.keys))
        #expect(HTTPServerMetrics.descriptions.values.allSatisfy { $0.count > 10 })
    }

    @Test func everyHTTPClientMetricHasADescription() throws {
        let metrics = TestMetrics()
        let record = HTTPClientMetricsTests.hook(metrics)
        var posted = HTTPClientMetricsTests.ok(.post)
        posted.requestBodyBytes = 4
        posted.retries = 1
        posted.connectionsOpened = 1
        posted.error = HTTPClientError(.transport, "reset")
        record(posted)
        let labels = Set(metrics.counters.map(\.label) + metrics.meters.map(\.label) + metrics.recorders.map(\.label)
                         + metrics.timers.map(\.label))
        #expect(labels.count == 7)
        #expect(labels == Set(HTTPClientMetrics.descriptions.keys))
        #expect(HTTPClientMetrics.descriptions.values.allSatisfy { $0.count > 10 })
    }
}
