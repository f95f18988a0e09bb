import CoreMetrics
import HTTPTypes
import LoopKit
import LoopKitHTTP

/// An HTTP server's requests and connections as swift-metrics, named after OpenTelemetry's HTTP semantic
/// conventions: a middleware (``middleware(factory:)``) for the requests and a configuration hook
/// (``record(into:factory:)``) for the open connections.
///
/// ```swift
/// var configuration = HTTPServer.Configuration(port: 8080)
/// HTTPServerMetrics.record(into: &configuration)      // open connections, and the middleware below
/// var router = HTTPRouter()
/// router.use(HTTPServerMetrics.middleware())          // first, so that it sees every answer
/// ```
///
/// | metric | kind | dimensions |
/// |---|---|---|
/// | `http.server.request.duration` | timer (histogram) | `http.request.method`, `http.route`, `http.response.status_code` |
/// | `http.server.requests` | counter | `http.request.method`, `http.response.status_class` (`2xx`…, `none` when no response went out) |
/// | `http.server.active_requests` | meter (up/down) | — |
/// | `http.server.request.body.size` | recorder (histogram) | `http.request.method` (collected bodies; 0 for streamed ones) |
/// | `http.server.response.body.size` | recorder (histogram) | `http.request.method`, `http.response.status_code` |
/// | `http.server.open_connections` | meter (up/down) | — |
///
/// `http.route` is the route's pattern (`/users/:id`), never the raw path, so the dimensions stay few.
///
/// ### When values reach the metrics backend
///
/// The histograms (durations and body sizes) get each request's value as the request starts or its
/// response ends. The counts are kept by each loop, on its own thread (no lock, no atomic per request),
/// and handed over once per loop iteration: `http.server.requests` gets one `increment(by:)` per
/// dimension set with the requests the iteration answered, and `http.server.active_requests` one
/// change, the requests started minus those ended; a request started and answered within one iteration
/// (a synchronous route on a keep-alive connection, the usual case) leaves it untouched. The hand-over
/// runs in the drain (phase 3) of the iteration that counted, or of the next one for requests answered
/// from a drain (async handlers); so a scrape sees a request's count at most one iteration after its
/// response ended, and a test that reads the counts after a response lets the server's loop drain first
/// (`HTTPTestClient.runUntilIdle()`). A loop that refuses work (shutting down) hands counts over at once.
public enum HTTPServerMetrics {
    /// The metric names.
    public enum Name {
        public static let requestDuration = "http.server.request.duration"
        public static let requests = "http.server.requests"
        public static let activeRequests = "http.server.active_requests"
        public static let requestBodySize = "http.server.request.body.size"
        public static let responseBodySize = "http.server.response.body.size"
        public static let openConnections = "http.server.open_connections"
    }

    /// One sentence on each metric, by name (``Name``): a backend's help text, such as Prometheus's
    /// `# HELP` line (swift-metrics itself carries none).
    ///
    /// Safe from any thread.
    public static let descriptions: [String: String] = [
        Name.requestDuration: "Time from a request's head to the end of its response, in seconds, by method, route and status code.",
        Name.requests: "Requests answered, by method and status class (none when no response went out).",
        Name.activeRequests: "Requests started whose responses have not ended yet.",
        Name.requestBodySize: "Size of each collected request body, in bytes (0 for streamed bodies), by method.",
        Name.responseBodySize: "Size of each response body sent, in bytes, by method and status code.",
        Name.openConnections: "Client connections open now.",
    ]

    /// The middleware that records every request. Add it first, so that the answers of the other
    /// middleware (a 401, a CORS preflight) are counted too.
    ///
    /// One middleware serves every loop of a server: each loop keeps its own share of it (its counts and
    /// the handles it used), made on the loop's first request.
    ///
    /// - Parameter factory: The metrics factory (the one bootstrapped by default).
    /// - Returns: The middleware, for `HTTPRouter.use(_:)`.
    ///
    /// Safe from any thread; the middleware runs on each connection's loop thread.
    public static func middleware(factory: any MetricsFactory = MetricsSystem.factory) -> some HTTPMiddleware {
        RequestMetrics(factory: factory)
    }

    /// Sets `configuration`'s connection hook to keep `http.server.open_connections`.
    ///
    /// - Parameters:
    ///   - configuration: The server's configuration, before the server is created.
    ///   - factory: The metrics factory (the one bootstrapped by default).
    ///
    /// Safe from any thread, before the server is made from `configuration`.
    public static func record(into configuration: inout HTTPServer.Configuration, factory: any MetricsFactory = MetricsSystem.factory) {
        let open = Meter(label: Name.openConnections, dimensions: [], factory: factory)
        configuration.connectionCountChanged = { delta in
            if delta > 0 { open.increment(by: Double(delta)) } else { open.decrement(by: Double(-delta)) }
        }
    }

    /// The request metrics. Each loop keeps its share (``LoopShare``, a loop-local value): the handles it
    /// has used, the requests counted and the change of the active requests since its last flush, all
    /// touched on the loop's thread only, with no lock and no atomic. The first change in an iteration
    /// queues the flush, which runs in that iteration's drain (the next one's, for a request answered
    /// from a drain) and hands the counts to the handles: one `increment(by:)` per dimension set. The
    /// histograms (duration, body sizes) get every value at once. The handles of a dimension set are
    /// made once for all loops (behind a lock taken on a loop's first use of the set only).
    private final class RequestMetrics: HTTPMiddleware {
        let factory: any MetricsFactory
        let active: Meter
        /// LoopKit's `Lock`: a `Mutex` the thread sanitizer can see.
        let shared: Lock<Handles>

        /// The handles made so far, by their dimensions.
        struct Handles {
            var requestBodySize: [String: Recorder] = [:]
            var ended: [EndedKey: Ended] = [:]
        }

        struct EndedKey: Hashable {
            var method: String
            var route: String
            var code: Int
        }

        /// The handles of one (method, route, status) set.
        struct Ended {
            let duration: CoreMetrics.Timer
            let requests: Counter
            let responseBodySize: Recorder
        }

        init(factory: any MetricsFactory) {
            self.factory = factory
            active = Meter(label: Name.activeRequests, dimensions: [], factory: factory)
            shared = Lock(Handles())
        }

        /// `loop`'s share. Loop thread.
        @inline(__always)
        private func share(on loop: EventLoop) -> LoopShare {
            loop.localValue(for: ObjectIdentifier(self)) { LoopShare(metrics: self) }
        }

        func handleRequest(_ request: inout HTTPServerRequest) throws -> HTTPServerResponse? {
            let share = share(on: request.loop)
            share.activeChange += 1
            share.changed(on: request.loop)
            // A request without a body (most GETs) has no body size to record (OpenTelemetry records the
            // size when there is a body).
            guard !request.body.isEmpty || request.head.headerFields[.contentLength] != nil else { return nil }
            share.requestBodySize(method: request.head.method.rawValue).record(request.body.count)
            return nil
        }

        func responseEnded(_ summary: HTTPResponseSummary, for request: HTTPServerRequest) {
            let share = share(on: request.loop)
            let counts = share.counts(method: request.head.method.rawValue, route: request.route ?? "unmatched",
                                      code: summary.status.map { $0.code } ?? 0)
            counts.handles.duration.recordNanoseconds(nanoseconds(summary.duration))
            counts.handles.responseBodySize.record(summary.bodyBytes)
            if counts.pending == 0 { share.counted.append(counts) }
            counts.pending += 1
            share.activeChange -= 1
            share.changed(on: request.loop)
        }

        /// The handles of a request-body dimension set, made on first use.
        func makeRequestBodySize(method: String) -> Recorder {
            shared.withLock { handles in
                if let recorder = handles.requestBodySize[method] { return recorder }
                let recorder = Recorder(label: Name.requestBodySize, dimensions: [("http.request.method", method)],
                                        aggregate: true, factory: factory)
                handles.requestBodySize[method] = recorder
                return recorder
            }
        }

        /// The handles of a response dimension set, made on first use.
        func makeEnded(_ key: EndedKey) -> Ended {
            shared.withLock { handles in
                if let ended = handles.ended[key] { return ended }
                let code = key.code == 0 ? "none" : String(key.code)
                let statusClass = key.code == 0 ? "none" : "\(key.code / 100)xx"
                let ended = Ended(
                    duration: CoreMetrics.Timer(label: Name.requestDuration, dimensions: [
                        ("http.request.method", key.method), ("http.route", key.route), ("http.response.status_code", code),
                    ], factory: factory),
                    requests: Counter(label: Name.requests, dimensions: [
                        ("http.request.method", key.method), ("http.response.status_class", statusClass),
                    ], factory: factory),
                    responseBodySize: Recorder(label: Name.responseBodySize, dimensions: [
                        ("http.request.method", key.method), ("http.response.status_code", code),
                    ], aggregate: true, factory: factory))
                handles.ended[key] = ended
                return ended
            }
        }

        /// One division of the duration's attoseconds (`components` costs two wider ones).
        private func nanoseconds(_ duration: Duration) -> Int64 {
            Int64(truncatingIfNeeded: duration.attoseconds / 1_000_000_000)
        }
    }

    /// The requests of one dimension set counted on a loop and not yet flushed.
    private final class PendingCounts {
        let handles: RequestMetrics.Ended
        /// Requests ended since the last flush.
        var pending: Int64 = 0

        init(handles: RequestMetrics.Ended) {
            self.handles = handles
        }
    }

    /// One loop's share of a middleware's metrics: the handles it used, and what it counted since its
    /// last flush.
    ///
    /// Loop-confined: a loop-local value, used on its loop's thread only (by the middleware, and by the
    /// flush it queues on that loop); `@unchecked Sendable` only so that the flush job can hold it.
    private final class LoopShare: @unchecked Sendable {  // one loop's counters: written on that loop, handed on there
        /// The middleware (held, so that its identity, the loop-local key, is not reused while this lives).
        let metrics: RequestMetrics
        /// Requests started minus requests ended since the last flush.
        var activeChange = 0
        /// The dimension sets with requests counted since the last flush.
        var counted: [PendingCounts] = []
        /// The counts of each dimension set this loop has seen, and the last one used (most requests have
        /// the route and status of the one before: two comparisons instead of a hash).
        private var counts: [RequestMetrics.EndedKey: PendingCounts] = [:]
        private var last: (key: RequestMetrics.EndedKey, counts: PendingCounts)?
        private var requestBodySizes: [String: Recorder] = [:]
        /// A flush is queued on the loop.
        private var isFlushQueued = false

        init(metrics: RequestMetrics) {
            self.metrics = metrics
        }

        func counts(method: String, route: String, code: Int) -> PendingCounts {
            if let last, last.key.code == code, last.key.route == route, last.key.method == method { return last.counts }
            let key = RequestMetrics.EndedKey(method: method, route: route, code: code)
            let found: PendingCounts
            if let known = counts[key] {
                found = known
            } else {
                found = PendingCounts(handles: metrics.makeEnded(key))
                counts[key] = found
            }
            last = (key, found)
            return found
        }

        func requestBodySize(method: String) -> Recorder {
            if let recorder = requestBodySizes[method] { return recorder }
            let recorder = metrics.makeRequestBodySize(method: method)
            requestBodySizes[method] = recorder
            return recorder
        }

        /// Something was counted: queue the flush unless it is queued already. A loop that refuses work
        /// (it is shutting down) gets the flush at once.
        func changed(on loop: EventLoop) {
            guard !isFlushQueued else { return }
            isFlushQueued = true
            do {
                try loop.enqueue { self.flush() }
            } catch {
                flush()
            }
        }

        /// Hands what was counted since the last flush to the handles.
        func flush() {
            isFlushQueued = false
            if activeChange > 0 {
                metrics.active.increment(by: Double(activeChange))
            } else if activeChange < 0 {
                metrics.active.decrement(by: Double(-activeChange))
            }
            activeChange = 0
            for counts in counted {
                counts.handles.requests.increment(by: counts.pending)
                counts.pending = 0
            }
            counted.removeAll(keepingCapacity: true)
        }
    }
}
