import CoreMetrics
import HTTPTypes
import LoopKit
import LoopKitHTTPClient

/// An HTTP client's requests as swift-metrics, named after OpenTelemetry's HTTP semantic conventions: a
/// configuration hook (``record(into:server:factory:)``) that sets `HTTPClient.Configuration.requestEnded`.
///
/// ```swift
/// var configuration = HTTPClient.Configuration()
/// HTTPClientMetrics.record(into: &configuration)               // http.client.request.duration, …
/// let client = HTTPClient(on: loop, configuration: configuration)
/// ```
///
/// | metric | kind | dimensions |
/// |---|---|---|
/// | `http.client.request.duration` | timer (histogram) | `http.request.method`, `http.response.status_code` (`none` when no head arrived) |
/// | `http.client.requests` | counter | `http.request.method`, `http.response.status_class` (`2xx`…, `none`) |
/// | `http.client.errors` | counter | `error.type` (the `HTTPClientError.Kind`: `connectFailed`, `deadlineExceeded`, …) |
/// | `http.client.request.body.size` | recorder (histogram) | `http.request.method` (requests that sent a body) |
/// | `http.client.response.body.size` | recorder (histogram) | `http.request.method`, `http.response.status_code` (bytes as received, before decoding) |
/// | `http.client.retries` | counter | — (requests sent again on a new connection: the pooled one was closed) |
/// | `http.client.connections` | counter | `http.connection.state`: `opened` (connections opened) or `reused` (requests sent on an open one) |
///
/// Each also has `server.address` (the host, without the port) when ``ServerDimension`` asks for it: off by
/// default, since every host named would be a series of its own. Methods other than the nine of RFC 9110
/// and PATCH are counted as `_OTHER`, as OpenTelemetry does.
///
/// Every request's values reach the handles when it ends, on the client's loop thread; the handles of a
/// dimension set are made on its first request and kept (behind a lock, taken once a request).
public enum HTTPClientMetrics {
    /// The metric names.
    public enum Name {
        public static let requestDuration = "http.client.request.duration"
        public static let requests = "http.client.requests"
        public static let errors = "http.client.errors"
        public static let requestBodySize = "http.client.request.body.size"
        public static let responseBodySize = "http.client.response.body.size"
        public static let retries = "http.client.retries"
        public static let connections = "http.client.connections"
    }

    /// One sentence on each metric, by name (``Name``): a backend's help text, such as Prometheus's
    /// `# HELP` line.
    ///
    /// Safe from any thread.
    public static let descriptions: [String: String] = [
        Name.requestDuration: "Time from a request's start to the end of its response body or its failure, in seconds, by method and status code.",
        Name.requests: "Requests ended, by method and status class (none when no response head arrived).",
        Name.errors: "Requests that failed, by the kind of failure.",
        Name.requestBodySize: "Size of each request body sent, in bytes, by method.",
        Name.responseBodySize: "Size of each response body as received (before decoding), in bytes, by method and status code.",
        Name.retries: "Requests sent again on a new connection because the pooled connection they went out on was closed.",
        Name.connections: "Connections opened, and requests sent on a connection already open (state opened or reused).",
    ]

    /// Whether the metrics carry `server.address`, the host a request was sent to.
    public enum ServerDimension: Sendable, Hashable {
        /// No `server.address` (the default).
        case omitted
        /// `server.address` is the host for these hosts and `other` for any other: the series stay as few as
        /// the set.
        case named(Set<String>)
        /// `server.address` is every request's host. Only for a client that calls a known, small set of hosts.
        case every
    }

    /// Sets `configuration`'s `HTTPClient.Configuration.requestEnded` to record every request; a hook set
    /// before is called too, first.
    ///
    /// - Parameters:
    ///   - configuration: The client's configuration, before the client is made.
    ///   - server: Whether the metrics carry the host (`server.address`). Default ``ServerDimension/omitted``.
    ///   - factory: The metrics factory (the one bootstrapped by default).
    ///
    /// Safe from any thread, before a client is made from `configuration`; the clients made from it (on any
    /// loops) share the handles.
    public static func record(into configuration: inout HTTPClient.Configuration, server: ServerDimension = .omitted,
                              factory: any MetricsFactory = MetricsSystem.factory) {
        let metrics = RequestMetrics(server: server, factory: factory)
        if let earlier = configuration.requestEnded {
            configuration.requestEnded = { summary in
                earlier(summary)
                metrics.record(summary)
            }
        } else {
            configuration.requestEnded = { summary in metrics.record(summary) }
        }
    }

    /// The handles, made per dimension set on first use.
    private final class RequestMetrics: Sendable {
        let server: ServerDimension
        let factory: any MetricsFactory
        /// LoopKit's `Lock`: a `Mutex` the thread sanitizer can see.
        let shared: Lock<Handles>

        init(server: ServerDimension, factory: any MetricsFactory) {
            self.server = server
            self.factory = factory
            shared = Lock(Handles())
        }

        struct Handles {
            var ended: [EndedKey: Ended] = [:]
            var errors: [ErrorKey: Counter] = [:]
            var byServer: [String: ByServer] = [:]
        }

        struct EndedKey: Hashable {
            var method: String
            var code: Int
            var server: String?
        }

        struct ErrorKey: Hashable {
            var kind: HTTPClientError.Kind
            var server: String?
        }

        /// The handles of one (method, status, server) set.
        struct Ended {
            let duration: CoreMetrics.Timer
            let requests: Counter
            let requestBodySize: Recorder
            let responseBodySize: Recorder
        }

        /// The handles with no dimension but the server.
        struct ByServer {
            let retries: Counter
            let opened: Counter
            let reused: Counter
        }

        func record(_ summary: HTTPClientRequestSummary) {
            let server = serverLabel(summary.authority)
            let key = EndedKey(method: Self.methodLabel(summary.method), code: summary.status?.code ?? 0, server: server)
            let (ended, byServer, error) = shared.withLock { handles in
                (Self.made(&handles.ended, key) { makeEnded(key) },
                 Self.made(&handles.byServer, server ?? "") { makeByServer(server) },
                 summary.error.map { error in
                     let key = ErrorKey(kind: error.kind, server: server)
                     return Self.made(&handles.errors, key) { makeErrors(key) }
                 })
            }
            ended.duration.recordNanoseconds(Self.nanoseconds(summary.duration))
            ended.requests.increment()
            if summary.requestBodyBytes > 0 { ended.requestBodySize.record(summary.requestBodyBytes) }
            if summary.status != nil { ended.responseBodySize.record(summary.responseBodyBytes) }
            error?.increment()
            if summary.retries > 0 { byServer.retries.increment(by: Int64(summary.retries)) }
            if summary.connectionsOpened > 0 { byServer.opened.increment(by: Int64(summary.connectionsOpened)) }
            if summary.reusedConnection { byServer.reused.increment() }
        }

        private static func made<Key: Hashable, Value>(_ table: inout [Key: Value], _ key: Key, _ make: () -> Value) -> Value {
            if let value = table[key] { return value }
            let value = make()
            table[key] = value
            return value
        }

        private func dimensions(_ pairs: [(String, String)], _ server: String?) -> [(String, String)] {
            guard let server else { return pairs }
            return pairs + [("server.address", server)]
        }

        private func makeEnded(_ key: EndedKey) -> Ended {
            let code = key.code == 0 ? "none" : String(key.code)
            let statusClass = key.code == 0 ? "none" : "\(key.code / 100)xx"
            return Ended(
                duration: CoreMetrics.Timer(label: Name.requestDuration, dimensions: dimensions([
                    ("http.request.method", key.method), ("http.response.status_code", code),
                ], key.server), factory: factory),
                requests: Counter(label: Name.requests, dimensions: dimensions([
                    ("http.request.method", key.method), ("http.response.status_class", statusClass),
                ], key.server), factory: factory),
                requestBodySize: Recorder(label: Name.requestBodySize, dimensions: dimensions([
                    ("http.request.method", key.method),
                ], key.server), aggregate: true, factory: factory),
                responseBodySize: Recorder(label: Name.responseBodySize, dimensions: dimensions([
                    ("http.request.method", key.method), ("http.response.status_code", code),
                ], key.server), aggregate: true, factory: factory))
        }

        private func makeByServer(_ server: String?) -> ByServer {
            ByServer(
                retries: Counter(label: Name.retries, dimensions: dimensions([], server), factory: factory),
                opened: Counter(label: Name.connections, dimensions: dimensions([("http.connection.state", "opened")], server), factory: factory),
                reused: Counter(label: Name.connections, dimensions: dimensions([("http.connection.state", "reused")], server), factory: factory))
        }

        private func makeErrors(_ key: ErrorKey) -> Counter {
            Counter(label: Name.errors, dimensions: dimensions([("error.type", Self.kindLabel(key.kind))], key.server), factory: factory)
        }

        /// The `server.address` of `authority`, or nil when the metrics carry none.
        private func serverLabel(_ authority: String) -> String? {
            switch server {
            case .omitted: return nil
            case .every: return Self.host(of: authority)
            case .named(let hosts):
                let host = Self.host(of: authority)
                return hosts.contains(host) ? host : "other"
            }
        }

        /// `authority` without its port (and without the brackets of an IPv6 literal), lowercased.
        static func host(of authority: String) -> String {
            var host = Substring(authority)
            if host.hasPrefix("["), let end = host.firstIndex(of: "]") {
                host = host[host.index(after: host.startIndex)..<end]
            } else if let colon = host.lastIndex(of: ":"), host.firstIndex(of: ":") == colon {
                host = host[..<colon]
            }
            return host.lowercased()
        }

        private static func methodLabel(_ method: HTTPRequest.Method) -> String {
            switch method {
            case .get, .head, .post, .put, .delete, .connect, .options, .trace, .patch: method.rawValue
            default: "_OTHER"
            }
        }

        private static func kindLabel(_ kind: HTTPClientError.Kind) -> String {
            switch kind {
            case .invalidRequest: "invalidRequest"
            case .connectFailed: "connectFailed"
            case .deadlineExceeded: "deadlineExceeded"
            case .tls: "tls"
            case .proxy: "proxy"
            case .tooManyRedirects: "tooManyRedirects"
            case .decompressionLimitExceeded: "decompressionLimitExceeded"
            case .responseTooLarge: "responseTooLarge"
            case .cancelled: "cancelled"
            case .shutDown: "shutDown"
            case .requestBodyFailed: "requestBodyFailed"
            case .transport: "transport"
            }
        }

        /// One division of the duration's attoseconds.
        private static func nanoseconds(_ duration: Duration) -> Int64 {
            Int64(truncatingIfNeeded: duration.attoseconds / 1_000_000_000)
        }
    }
}
