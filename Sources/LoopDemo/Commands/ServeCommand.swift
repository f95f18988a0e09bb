import ArgumentParser
import LoopDemoKit
import LoopKit
import LoopKitHTTP
import LoopKitMetrics
import LoopKitNet
import Logging
import Metrics
import Prometheus
import ServiceLifecycle
#if canImport(Glibc)
import Glibc
#endif

/// `LoopDemo serve`: the HTTP server with the demo's routes, until SIGINT or SIGTERM.
struct ServeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve /hello, /echo, /stream?bytes=N and /work?items=N over HTTP/1.1 and HTTP/2: h2c by prior knowledge, h2 over TLS (--tls-cert, --tls-key) by ALPN; SIGINT/SIGTERM stop it gracefully."
    )

    @Option(help: "The numeric IPv4 or IPv6 address to listen on.")
    var host = "127.0.0.1"

    @Option(help: "The port; 0 picks a free one.")
    var port = 0

    @Option(help: "Loops (threads) serving connections.")
    var threads = 1

    @Option(name: .customLong("max-body"),
            help: "The largest request body, in bytes, on every route, /echo and /upload included (413 past it). Without it: 1 MiB for the bodies a route collects, no limit for /echo and /upload.")
    var maxBody: Int?

    @Option(name: .customLong("ws-max-message"),
            help: "The largest WebSocket message /ws/echo takes, in bytes (1009 past it); 1 MiB without it. Its frames may be as large.")
    var webSocketMaxMessage: Int?

    @Option(name: .customLong("log-level"), help: "trace, debug, info (an access line per request), notice, warning, error, critical.")
    var logLevel = "info"

    @Option(name: .customLong("tls-cert"), help: "Serve HTTPS with this PEM certificate chain (with --tls-key).")
    var tlsCertificate: String?

    @Option(name: .customLong("tls-key"), help: "The PEM private key of --tls-cert.")
    var tlsKey: String?

    @Option(help: "Serve this directory's files under /files/ (ranges, ETags, precompressed .br/.zst/.gz variants).")
    var root: String?

    @Option(name: .customLong("metrics"), help: "Serve the loops' metrics in Prometheus text format at GET /metrics on this port (0 picks a free one).")
    var metricsPort: Int?

    func validate() throws {
        guard (tlsCertificate == nil) == (tlsKey == nil) else { throw ValidationError("--tls-cert and --tls-key go together") }
        guard (0...65535).contains(port) else { throw ValidationError("--port must be in 0...65535") }
        if let metricsPort, !(0...65535).contains(metricsPort) { throw ValidationError("--metrics must be in 0...65535") }
        guard threads >= 1 else { throw ValidationError("--threads must be at least 1") }
        if let maxBody, maxBody < 0 { throw ValidationError("--max-body must not be negative") }
        if let webSocketMaxMessage, webSocketMaxMessage < 1 { throw ValidationError("--ws-max-message must be at least 1") }
        guard Logger.Level(rawValue: logLevel) != nil else { throw ValidationError("unknown --log-level \(logLevel)") }
    }

    func run() throws {
        // Logs go to standard error: standard output carries only the "listening on" line.
        // Batched: one access line per request costs a format and an append, not a write and a flush each.
        let sink = BatchedLogHandler.Sink()
        LoggingSystem.bootstrap { label in BatchedLogHandler(label: label, sink: sink) }
        defer { sink.flush() }
        var logger = Logger(label: "loopdemo.serve")
        logger.logLevel = Logger.Level(rawValue: logLevel)!
        let group = try LoopGroup(threads: threads, name: "serve")
        var configuration = HTTPServer.Configuration(host: host, port: port)
        // The access lines go into the sink as bytes: the same lines, without a log event each.
        if logger.logLevel <= .info { configuration.accessLogSink = BatchedLogHandler.AccessLines(label: "loopdemo.serve", sink: sink) }
        if let maxBody { configuration.maxBodySize = maxBody }
        if let tlsCertificate, let tlsKey {
            configuration.tls = try TLSContext(.server(certificateChain: .file(tlsCertificate), privateKey: .file(tlsKey)))
        }
        var webSocket = WebSocketConfiguration()
        if let webSocketMaxMessage {
            webSocket.maxMessageSize = webSocketMaxMessage
            webSocket.maxFrameSize = max(webSocket.maxFrameSize, webSocketMaxMessage)
        }
        var router = DemoRoutes.router(work: .calibrated(nanosecondsPerItem: 1_000), maxBodySize: maxBody, webSocket: webSocket,
                                       filesRoot: root)
        let registry = metricsPort.map { _ in Self.bootstrapMetrics() }
        if registry != nil {
            // Every loop's iterations, every request (the middleware first: it sees every answer), the connections.
            for (index, loop) in group.loops.enumerated() { try LoopMetrics.record(loop, name: "serve-\(index)") }
            router.use(HTTPServerMetrics.middleware())
            HTTPServerMetrics.record(into: &configuration)
        }
        let server = HTTPServer(group: group, configuration: configuration, router: router, logger: logger)
        let port = try server.start()
        print("listening on \(host):\(port)")
        var services: [any Service] = [server]
        if let metricsPort, let registry {
            let metrics = try Self.serveMetrics(registry, on: group, host: host, port: metricsPort, logger: logger)
            services.append(metrics.server)
            print("metrics on \(host):\(metrics.port)")
        }
        fflush(nil)  // every output stream: the line must reach a pipe at once

        // The main thread runs a loop of its own until the service group has returned.
        let main = try EventLoop()
        let serviceGroup = ServiceGroup(services: services, gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
        Task {
            do {
                try await serviceGroup.run()
            } catch {
                logger.error("server failed", metadata: ["error": "\(error)"])
            }
            main.stop()
        }
        try main.run()
        group.shutdown()
    }

    /// Bootstraps swift-metrics with a Prometheus registry, with microsecond buckets for the loops' timers.
    private static func bootstrapMetrics() -> PrometheusCollectorRegistry {
        let registry = PrometheusCollectorRegistry()
        var factory = PrometheusMetricsFactory(registry: registry)
        // A loop's iterations last microseconds to milliseconds: buckets from 10 µs to 1 s.
        let fine: [Duration] = [.microseconds(10), .microseconds(50), .microseconds(100), .microseconds(500), .milliseconds(1),
                                .milliseconds(2), .milliseconds(5), .milliseconds(10), .milliseconds(50), .milliseconds(100),
                                .milliseconds(500), .seconds(1)]
        for label in [LoopMetrics.Name.iterationDuration, LoopMetrics.Name.pollWait, LoopMetrics.Name.timerLateness,
                      HTTPServerMetrics.Name.requestDuration] {
            factory.durationHistogramBuckets[label] = fine
        }
        factory.valueHistogramBuckets[LoopMetrics.Name.drainSize] = [0, 1, 2, 5, 10, 50, 100, 500, 1000, 10_000]
        // Body sizes in bytes, from empty to 1 GiB (Prometheus's default buckets end at 10).
        let bytes: [Double] = [0, 64, 256, 1024, 4096, 16_384, 65_536, 262_144, 1_048_576, 16_777_216, 1_073_741_824]
        for label in [HTTPServerMetrics.Name.requestBodySize, HTTPServerMetrics.Name.responseBodySize] {
            factory.valueHistogramBuckets[label] = bytes
        }
        // swift-metrics carries no help text: the registry gets LoopKitMetrics' descriptions as `# HELP` lines.
        let descriptions = LoopMetrics.descriptions.merging(HTTPServerMetrics.descriptions) { first, _ in first }
        MetricsSystem.bootstrap(DescribedPrometheusMetricsFactory(prometheus: factory, descriptions: descriptions))
        return registry
    }

    /// Serves the registry's text format at `GET /metrics` on a second port.
    private static func serveMetrics(_ registry: PrometheusCollectorRegistry, on group: LoopGroup, host: String, port: Int,
                                     logger: Logger) throws -> (server: HTTPServer, port: Int) {
        var router = HTTPRouter()
        router.get("/metrics") { _ in
            HTTPServerResponse(status: .ok, headerFields: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                               body: .bytes(Bytes(registry.emitToBuffer())))
        }
        var quiet = logger
        quiet.logLevel = max(logger.logLevel, .notice)  // scrapes are not worth an access line each
        let server = HTTPServer(group: group, configuration: HTTPServer.Configuration(host: host, port: port), router: router, logger: quiet)
        return (server, try server.start())
    }
}

/// A ``PrometheusMetricsFactory`` whose metrics carry a description: each family whose label has one gets
/// a `# HELP` line (swift-metrics' `MetricsFactory` has no help text, so swift-prometheus's factory emits
/// none). Labels without a description are made by the wrapped factory, as they would be without it.
///
/// A value: safe from any thread (the registry locks).
private struct DescribedPrometheusMetricsFactory: MetricsFactory {
    /// The wrapped factory: its registry, histogram buckets and name sanitizer.
    let prometheus: PrometheusMetricsFactory
    /// The help text of each metric, by swift-metrics label.
    let descriptions: [String: String]

    /// The Prometheus name and labels of a described metric, with its help text; nil when it has none.
    private func described(_ label: String, _ dimensions: [(String, String)]) -> (MetricNameDescriptor, [(String, String)])? {
        guard let help = descriptions[label] else { return nil }
        let (name, labels) = prometheus.nameAndLabelSanitizer(label, dimensions)
        return (MetricNameDescriptor(metricName: name, unitName: "", helpText: help), labels)
    }

    func makeCounter(label: String, dimensions: [(String, String)]) -> any CounterHandler {
        guard let (descriptor, labels) = described(label, dimensions) else {
            return prometheus.makeCounter(label: label, dimensions: dimensions)
        }
        return prometheus.registry.makeCounter(descriptor: descriptor, labels: labels)
    }

    func makeFloatingPointCounter(label: String, dimensions: [(String, String)]) -> any FloatingPointCounterHandler {
        guard let (descriptor, labels) = described(label, dimensions) else {
            return prometheus.makeFloatingPointCounter(label: label, dimensions: dimensions)
        }
        return prometheus.registry.makeCounter(descriptor: descriptor, labels: labels)
    }

    func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> any RecorderHandler {
        guard let (descriptor, labels) = described(label, dimensions) else {
            return prometheus.makeRecorder(label: label, dimensions: dimensions, aggregate: aggregate)
        }
        guard aggregate else { return prometheus.registry.makeGauge(descriptor: descriptor, labels: labels) }
        let buckets = prometheus.valueHistogramBuckets[descriptor.name] ?? prometheus.defaultValueHistogramBuckets
        return prometheus.registry.makeValueHistogram(descriptor: descriptor, labels: labels, buckets: buckets)
    }

    func makeMeter(label: String, dimensions: [(String, String)]) -> any MeterHandler {
        guard let (descriptor, labels) = described(label, dimensions) else {
            return prometheus.makeMeter(label: label, dimensions: dimensions)
        }
        return prometheus.registry.makeGauge(descriptor: descriptor, labels: labels)
    }

    func makeTimer(label: String, dimensions: [(String, String)]) -> any TimerHandler {
        guard let (descriptor, labels) = described(label, dimensions) else {
            return prometheus.makeTimer(label: label, dimensions: dimensions)
        }
        let buckets = prometheus.durationHistogramBuckets[descriptor.name] ?? prometheus.defaultDurationHistogramBuckets
        return prometheus.registry.makeDurationHistogram(descriptor: descriptor, labels: labels, buckets: buckets)
    }

    func destroyCounter(_ handler: any CounterHandler) { prometheus.destroyCounter(handler) }
    func destroyFloatingPointCounter(_ handler: any FloatingPointCounterHandler) { prometheus.destroyFloatingPointCounter(handler) }
    func destroyRecorder(_ handler: any RecorderHandler) { prometheus.destroyRecorder(handler) }
    func destroyMeter(_ handler: any MeterHandler) { prometheus.destroyMeter(handler) }
    func destroyTimer(_ handler: any TimerHandler) { prometheus.destroyTimer(handler) }
}
