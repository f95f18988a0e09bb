extension HTTPClient {
    /// How an ``HTTPClient`` connects, pools, follows redirects, decodes and verifies.
    ///
    /// A plain value; safe from any thread. The client reads it once, when it is made.
    public struct Configuration: Sendable {
        /// Open connections per host (CURLMOPT_MAX_HOST_CONNECTIONS; the own engine's pool likewise); further
        /// requests to the host wait for one (HTTP/1.1) or share one (HTTP/2). Default 8.
        public var maximumConnectionsPerHost = 8
        /// Idle connections kept for reuse, all hosts together (CURLMOPT_MAXCONNECTS; each engine its own).
        /// Default 64.
        public var maximumIdleConnections = 64
        /// How long an idle connection is kept for reuse (CURLOPT_MAXAGE_CONN, whole seconds; the own engine's
        /// to the nanosecond). Default 60 s.
        public var idleTimeout: Duration = .seconds(60)
        /// The deadline for a connection (TCP, TLS and proxy), per request (CURLOPT_CONNECTTIMEOUT_MS).
        /// Default 10 s.
        public var connectTimeout: Duration = .seconds(10)
        /// The deadline for a whole request, head and body, when ``HTTPClient/execute(_:body:deadline:)``
        /// gives none (CURLOPT_TIMEOUT_MS). Nil, the default: none.
        public var requestTimeout: Duration?
        /// Whether and how far redirects are followed. Default: up to 5.
        public var redirects: RedirectPolicy = .follow(maximum: 5)
        /// Whether compressed bodies are asked for and decoded, and the limits that refuse a bomb.
        public var decompression: Decompression = .enabled()
        /// Verification and client identity for https.
        public var tls = TLS()
        /// A proxy for every request; nil, the default, connects directly (and ignores `http_proxy` and the
        /// like in the environment).
        public var proxy: Proxy?
        /// The HTTP versions offered. Default ``HTTPVersionPolicy/automatic``.
        public var httpVersion: HTTPVersionPolicy = .automatic
        /// Response body bytes buffered for a consumer that has not read them before the transfer pauses
        /// (curl_easy_pause, curl stops reading the socket; the own engine stops reading its connection). Default 1 MiB: four of curl's 256 KiB reads,
        /// so a consumer that keeps up (one on the client's loop, between two reads) never pauses it.
        public var bodyHighWaterMark = 1024 * 1024
        /// Buffered bytes at or below which a paused transfer resumes. Default 256 KiB.
        public var bodyLowWaterMark = 256 * 1024
        /// Told what each request did once it has ended (``HTTPClientRequestSummary``): requests whose
        /// head arrived when the body's last byte has arrived (before its reader sees the end), failures
        /// when they fail — invalid requests and requests refused by a shut-down client included. Every
        /// request is told exactly once. `LoopKitMetrics`' `HTTPClientMetrics.record(into:)` sets it.
        ///
        /// Nil, the default: nothing is measured (the client reads no clock and asks curl nothing more).
        ///
        /// Called on the client's loop thread: keep it short, and do not call the client from it.
        public var requestEnded: (@Sendable (HTTPClientRequestSummary) -> Void)?
        /// Which engine sends a request. Default ``Engine/automatic`` (with the default decoding on, that is
        /// curl for every request: set ``decompression`` to ``Decompression/disabled`` for the own engine).
        public var engine: Engine = .automatic

        /// The defaults.
        public init() {}

        /// Redirect handling (CURLOPT_FOLLOWLOCATION, CURLOPT_MAXREDIRS). Credentials set by the caller
        /// (`Authorization`, `Cookie`) are not sent to a host other than the first.
        public enum RedirectPolicy: Sendable, Hashable {
            /// The redirect response is the response.
            case disallow
            /// Follow up to `maximum` redirects; one more is ``HTTPClientError/Kind/tooManyRedirects``.
            case follow(maximum: Int)
        }

        /// Content decoding (gzip, deflate, brotli, zstd through CURLOPT_ACCEPT_ENCODING).
        public enum Decompression: Sendable, Hashable {
            /// No `Accept-Encoding` is sent; bodies are given as received.
            case disabled
            /// Bodies are decoded; one that decodes past `maximumSize` bytes, or past `maximumRatio` times
            /// its encoded size (checked from 1 MiB decoded), fails with
            /// ``HTTPClientError/Kind/decompressionLimitExceeded``.
            case enabled(maximumSize: Int = 64 * 1024 * 1024, maximumRatio: Int = 100)
        }

        /// TLS verification and client identity.
        public struct TLS: Sendable, Hashable {
            /// A PEM file of the certificate authorities trusted instead of the system's (CURLOPT_CAINFO).
            public var caFile: String?
            /// A PEM client certificate (CURLOPT_SSLCERT) and its key (CURLOPT_SSLKEY) for mutual TLS.
            public var certificateFile: String?
            public var privateKeyFile: String?
            /// Accepts any certificate for any name. **Unsafe**: anyone on the path can read and change the
            /// traffic. For a test against a throwaway server only. Default false.
            public var unsafeSkipsCertificateVerification = false

            /// Verification on, the system's authorities.
            public init() {}
        }

        /// A proxy (CURLOPT_PROXY): `http://host:port`, `https://…`, `socks5://…`, `socks5h://…` (the proxy
        /// resolves names), `socks4://…`.
        public struct Proxy: Sendable, Hashable {
            /// The proxy's URL.
            public var url: String
            /// Whether plain-http requests go through a CONNECT tunnel too (CURLOPT_HTTPPROXYTUNNEL); https
            /// always does.
            public var tunnelsPlainHTTP: Bool

            public init(url: String, tunnelsPlainHTTP: Bool = false) {
                self.url = url
                self.tunnelsPlainHTTP = tunnelsPlainHTTP
            }
        }

        /// The engine behind the requests.
        public enum Engine: Sendable, Hashable {
            /// libcurl's multi-socket engine for every request: HTTP/1.1 and HTTP/2, TLS, proxies, decoding
            /// (and libcurl's retry rule, `CURLcode`s in errors).
            case curl
            /// LoopKit's own HTTP/1.1 engine (LoopKitNet's connections on the loop, a pool per host) for
            /// the requests it supports — plain `http`, no ``Configuration/proxy``, not
            /// ``HTTPVersionPolicy/http2PriorKnowledge``, no decoding
            /// (``Decompression/disabled``), no ``Configuration/requestEnded`` (its requests are not yet
            /// summarized), a body of bytes or none — and curl's for the rest. Redirects
            /// to `http` are followed by the own engine, to anything else by curl. The default: on the
            /// request-rate benchmark the own engine answers about 3× the requests curl's does.
            case automatic
        }

        /// Which HTTP versions the client offers.
        public enum HTTPVersionPolicy: Sendable, Hashable {
            /// HTTP/2 over TLS when the server picks it in ALPN (several requests to the host then share
            /// one connection), HTTP/1.1 otherwise and for plain http.
            case automatic
            /// HTTP/1.1 only.
            case http1Only
            /// HTTP/2 without negotiation, plain http included (h2c by prior knowledge).
            case http2PriorKnowledge
        }
    }
}
