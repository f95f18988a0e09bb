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

    /// The middleware that records every request. Add it first, so that the answers of the other
    /// middleware (a 401, a CORS preflight) are counted too.
    ///
    /// - Parameter factory: The metrics factory (the one bootstrapped by default).
    /// - Returns: The middleware, for `HTTPRouter.use(_:)`.
    public static func middleware(factory: any MetricsFactory = MetricsSystem.factory) -> some HTTPMiddleware {
        RequestMetrics(factory: factory)
    }

    /// Sets `configuration`'s connection hook to keep `http.server.open_connections`.
    ///
    /// - Parameters:
    ///   - configuration: The server's configuration, before the server is created.
    ///   - factory: The metrics factory (the one bootstrapped by default).
    public static func record(into configuration: inout HTTPServer.Configuration, factory: any MetricsFactory = MetricsSystem.factory) {
        let open = Meter(label: Name.openConnections, dimensions: [], factory: factory)
        configuration.connectionCountChanged = { delta in
            if delta > 0 { open.increment(by: Double(delta)) } else { open.decrement(by: Double(-delta)) }
        }
    }

    /// The request metrics. The handles of each dimension set are made on first use and kept here, behind
    /// one lock taken once per request (a factory's own lookup, Prometheus's say, costs more).
    private final class RequestMetrics: HTTPMiddleware {
        let factory: any MetricsFactory
        let active: Meter
        /// LoopKit's `Lock`: a `Mutex` the thread sanitizer can see.
        let handles: Lock<Handles>

        /// The handles made so far, by their dimensions, and the last ones used (most requests hit the
        /// same route and status as the one before: a comparison instead of a hash).
        struct Handles {
            var requestBodySize: [String: Recorder] = [:]
            var ended: [EndedKey: Ended] = [:]
            var last: (key: EndedKey, ended: Ended)?
        }

        struct EndedKey: Hashable {
            var method: String
            var route: String
            var code: Int
        }

        struct Ended {
            let duration: CoreMetrics.Timer
            let requests: Counter
            let responseBodySize: Recorder
        }

        init(factory: any MetricsFactory) {
            self.factory = factory
            active = Meter(label: Name.activeRequests, dimensions: [], factory: factory)
            handles = Lock(Handles())
        }

        func handleRequest(_ request: inout HTTPServerRequest) throws -> HTTPServerResponse? {
            active.increment()
            // A request without a body (most GETs) has no body size to record (OpenTelemetry records the
            // size when there is a body).
            guard !request.body.isEmpty || request.head.headerFields[.contentLength] != nil else { return nil }
            let method = request.head.method.rawValue
            let recorder = handles.withLock { handles in
                if let recorder = handles.requestBodySize[method] { return recorder }
                let recorder = Recorder(label: Name.requestBodySize, dimensions: [("http.request.method", method)],
                                        aggregate: true, factory: factory)
                handles.requestBodySize[method] = recorder
                return recorder
            }
            recorder.record(request.body.count)
            return nil
        }

        func responseEnded(_ summary: HTTPResponseSummary, for request: HTTPServerRequest) {
            active.decrement()
            let key = EndedKey(method: request.head.method.rawValue, route: request.route ?? "unmatched",
                               code: summary.status.map { $0.code } ?? 0)
            let ended = handles.withLock { handles in
                if let last = handles.last, last.key == key { return last.ended }
                if let ended = handles.ended[key] {
                    handles.last = (key, ended)
                    return ended
                }
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
                handles.last = (key, ended)
                return ended
            }
            ended.duration.recordNanoseconds(nanoseconds(summary.duration))
            ended.requests.increment()
            ended.responseBodySize.record(summary.bodyBytes)
        }

        private func nanoseconds(_ duration: Duration) -> Int64 {
            let (seconds, attoseconds) = duration.components
            return seconds.multipliedReportingOverflow(by: 1_000_000_000).partialValue &+ attoseconds / 1_000_000_000
        }
    }
}
