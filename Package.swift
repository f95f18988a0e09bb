// swift-tools-version: 6.3
import PackageDescription

let package = Package(
    name: "LoopKit",
    products: [
        .library(name: "LoopKit", targets: ["LoopKit"]),
        // Loop-ordering tests: a stepped loop on virtual time. Depends on LoopKit only.
        .library(name: "LoopKitTesting", targets: ["LoopKitTesting"]),
        // Connection tests: two connections joined in memory (plain or TLS) on a stepped loop.
        .library(name: "LoopKitNetTesting", targets: ["LoopKitNetTesting"]),
        // TCP and Unix-domain listeners and connections on the loop (non-blocking sockets the loop watches).
        .library(name: "LoopKitNet", targets: ["LoopKitNet"]),
        // TLS for LoopKitNet's listeners and connects, on OpenSSL.
        .library(name: "LoopKitTLS", targets: ["LoopKitTLS"]),
        // The C ABI (loopkit.h) as a shared library: libLoopKitC.so.
        .library(name: "LoopKitC", type: .dynamic, targets: ["LoopKitC"]),
        // Swift's main and default executors on LoopKit's loops (experimental SPI of Swift 6.3), opt-in.
        .library(name: "LoopKitExecutors", targets: ["LoopKitExecutors"]),
        .library(name: "LoopKitHTTP", targets: ["LoopKitHTTP"]),
        // A test client for LoopKitHTTP routes, in memory on a stepped loop or live over a socket. A product
        // of its own so that LoopKitTesting (loop-ordering tests) does not pull in the HTTP stack.
        .library(name: "LoopKitHTTPTesting", targets: ["LoopKitHTTPTesting"]),
        // Loop, HTTP server and HTTP client metrics on swift-metrics, kept out of LoopKit, LoopKitHTTP and
        // LoopKitHTTPClient.
        .library(name: "LoopKitMetrics", targets: ["LoopKitMetrics"]),
        // An HTTP client on the loop (libcurl's multi-socket engine), kept out of the server's product.
        .library(name: "LoopKitHTTPClient", targets: ["LoopKitHTTPClient"]),
        .executable(name: "LoopDemo", targets: ["LoopDemo"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-collections", from: "1.6.0"),
        // Test-only: property-based tests (the progress tree arithmetic).
        .package(url: "https://github.com/x-sheep/swift-property-based", from: "2.0.1"),
        // LoopDemo only: the demo's command line.
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        // LoopKitHTTP only: the ecosystem's currency types, logging and service lifecycle.
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        // LoopKitMetrics only: the ecosystem's metrics API; LoopDemo exposes it with swift-prometheus.
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        // LoopKitHTTP only: W3C trace context carried in a `ServiceContext` and a server span per request
        // (`ServiceContext` lives in this package since 1.7.3; swift-service-context only re-exports it).
        .package(url: "https://github.com/apple/swift-distributed-tracing", from: "1.7.3"),
    ],
    targets: [
        .systemLibrary(
            name: "CEvent",
            pkgConfig: "libevent_pthreads",
            providers: [.apt(["libevent-dev"])]
        ),
        // OpenSSL 3 from Debian's libssl-dev: LoopKitTLS, SHA-256 for the demo's /upload, SHA-1 for
        // the WebSocket handshake.
        .systemLibrary(
            name: "COpenSSL",
            pkgConfig: "openssl",
            providers: [.apt(["libssl-dev"])]
        ),
        // zlib from Debian's zlib1g-dev: permessage-deflate for LoopKitHTTP's WebSockets.
        .systemLibrary(
            name: "CZlib",
            pkgConfig: "zlib",
            providers: [.apt(["zlib1g-dev"])]
        ),
        // Brotli from Debian's libbrotli-dev and Zstandard from libzstd-dev: the `br` and `zstd` content
        // codings of LoopKitHTTP's response compression and request decompression (gzip is CZlib's).
        .systemLibrary(
            name: "CBrotli",
            pkgConfig: "libbrotlienc",
            providers: [.apt(["libbrotli-dev"])]
        ),
        .systemLibrary(
            name: "CZstd",
            pkgConfig: "libzstd",
            providers: [.apt(["libzstd-dev"])]
        ),
        // nghttp2 from Debian's libnghttp2-dev: LoopKitHTTP's HTTP/2 codec (framing, HPACK, flow control).
        .systemLibrary(
            name: "CNGHTTP2",
            pkgConfig: "libnghttp2",
            providers: [.apt(["libnghttp2-dev"])]
        ),
        // libcurl from Debian's libcurl4-openssl-dev: LoopKitHTTPClient's engine (HTTP/1.1, HTTP/2, TLS on
        // the same OpenSSL, proxies, decoding), driven by the loop through its multi-socket interface.
        .systemLibrary(
            name: "CCurl",
            pkgConfig: "libcurl",
            providers: [.apt(["libcurl4-openssl-dev"])]
        ),
        // The calling thread's identity through a function the optimiser cannot see into (glibc's
        // pthread_self is `const`, which is wrong across an `await`).
        .target(name: "CThread"),
        // libdispatch's run-loop hooks for the main queue (what CFRunLoop calls), for EventLoop.main.
        .systemLibrary(name: "CDispatchMainQueue"),
        .target(
            name: "LoopKit",
            dependencies: [
                "CEvent",
                "CThread",
                "CDispatchMainQueue",
                .product(name: "HeapModule", package: "swift-collections"),
                .product(name: "DequeModule", package: "swift-collections"),  // Broadcast's per-subscriber queues
            ]
        ),
        // Sockets, children, files, path watching, UDP: what a C host gets too. No OpenSSL: TLS is LoopKitTLS's.
        .target(name: "LoopKitNet", dependencies: ["LoopKit"]),
        // TLS on OpenSSL, a security layer over LoopKitNet's transports (ListenerOptions.tls, connect(…tls:)).
        .target(name: "LoopKitTLS", dependencies: ["LoopKit", "LoopKitNet", "COpenSSL"]),
        // The only target that imports the SPI of Swift's custom executors; LoopKit itself never does.
        .target(name: "LoopKitExecutors", dependencies: ["LoopKit"]),
        // An async main on LoopKit's executors; LoopKitTests runs it.
        .executableTarget(name: "ExecutorsProbe", dependencies: ["LoopKit", "LoopKitExecutors"], path: "Tests/ExecutorsProbe"),
        .target(name: "LoopKitTesting", dependencies: ["LoopKit"]),
        .target(name: "LoopKitNetTesting", dependencies: ["LoopKit", "LoopKitNet", "LoopKitTLS", "LoopKitTesting"]),
        .target(name: "CLoopKit"),
        // The C ABI: the loop (LoopKit) and the runtime services on it (LoopKitNet: lk_udp_*), one .so.
        .target(name: "LoopKitC", dependencies: ["LoopKit", "LoopKitNet", "CLoopKit"]),
        // The tour's parts and output, as a library so tests can run them; LoopDemo is its command line.
        .target(
            name: "LoopDemoKit",
            dependencies: ["LoopKit", "LoopKitNet", "LoopKitTLS", "LoopKitHTTP", "COpenSSL", .product(name: "Logging", package: "swift-log")]
        ),
        // The HTTP/1.1 server on the loop; its dependencies stay out of the core LoopKit product.
        .target(
            name: "LoopKitHTTP",
            dependencies: [
                "LoopKit",
                "LoopKitNet",
                "LoopKitTLS",  // HTTPS (re-exported: Configuration.tls is a TLSContext)
                "COpenSSL",  // SHA-1 and base64 for the WebSocket handshake
                "CZlib",  // permessage-deflate, gzip content coding
                "CBrotli",  // br content coding
                "CZstd",  // zstd content coding
                "CNGHTTP2",  // HTTP/2
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ]
        ),
        .target(
            name: "LoopKitHTTPClient",
            dependencies: [
                "LoopKit", "LoopKitNet", "CCurl",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "Instrumentation", package: "swift-distributed-tracing"),
            ]
        ),
        .testTarget(
            name: "LoopKitHTTPClientTests",
            dependencies: [
                "LoopKitHTTPClient", "LoopKitHTTP", "LoopKit", "LoopKitNet", "TestSupport",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ]
        ),
        .target(
            name: "LoopKitMetrics",
            dependencies: [
                "LoopKit", "LoopKitHTTP", "LoopKitHTTPClient",
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ]
        ),
        .testTarget(
            name: "LoopKitMetricsTests",
            dependencies: [
                "LoopKitMetrics", "LoopKit", "LoopKitTesting", "LoopKitHTTP", "LoopKitHTTPTesting", "LoopKitHTTPClient", "LoopKitNet",
                .product(name: "MetricsTestKit", package: "swift-metrics"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "LoopKitHTTPTesting",
            dependencies: [
                "LoopKitHTTP", "LoopKit", "LoopKitNet", "LoopKitTesting", "LoopKitNetTesting",
                "CNGHTTP2",  // the HTTP/2 test modes' client session
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // Child processes for the tests (posix_spawn; Foundation's Process crashes with many descriptors open).
        .target(name: "TestSupport", path: "Tests/TestSupport"),
        .testTarget(
            name: "LoopKitHTTPTests",
            dependencies: [
                "LoopKitHTTP", "LoopKit", "LoopKitNet", "LoopKitHTTPTesting", "LoopKitNetTesting", "LoopDemoKit", "TestSupport",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ]
        ),
        .executableTarget(
            name: "LoopDemo",
            dependencies: [
                "LoopDemoKit", "LoopKitHTTP", "LoopKitHTTPClient", "LoopKitNet", "LoopKitMetrics",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ]
        ),
        // A program whose main thread runs EventLoop.main; LoopKitTests runs it (the test runner owns the
        // test process's main thread).
        .executableTarget(name: "MainLoopProbe", dependencies: ["LoopKit"], path: "Tests/MainLoopProbe"),
        .testTarget(
            name: "LoopKitTests",
            dependencies: [
                "LoopKit",
                "LoopKitTesting",
                "LoopDemoKit",
                "TestSupport",
                .product(name: "PropertyBased", package: "swift-property-based"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // Examples/TodoService: a JSON todo API, a chat room and jobs on two loops (issue 31's service),
        // built and tested with the package.
        .target(name: "TodoServiceApp", dependencies: ["LoopKit", "LoopKitHTTP"], path: "Examples/TodoService/Sources/TodoServiceApp"),
        .executableTarget(
            name: "TodoService",
            dependencies: [
                "TodoServiceApp", "LoopKit", "LoopKitHTTP",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            path: "Examples/TodoService/Sources/TodoService"
        ),
        .testTarget(
            name: "TodoServiceTests",
            dependencies: ["TodoServiceApp", "LoopKit", "LoopKitHTTP", "LoopKitHTTPTesting", "LoopKitTesting"],
            path: "Examples/TodoService/Tests/TodoServiceTests"
        ),
        // Examples/ProcessRunner: allowed commands run as child processes, their output's lines streamed as
        // server-sent events and over a WebSocket (issue 47's process runner), built and tested with the package.
        .target(name: "ProcessRunnerApp", dependencies: ["LoopKit", "LoopKitNet", "LoopKitHTTP"],
                path: "Examples/ProcessRunner/Sources/ProcessRunnerApp"),
        .executableTarget(
            name: "ProcessRunner",
            dependencies: [
                "ProcessRunnerApp", "LoopKit", "LoopKitHTTP",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            path: "Examples/ProcessRunner/Sources/ProcessRunner"
        ),
        .testTarget(
            name: "ProcessRunnerTests",
            dependencies: ["ProcessRunnerApp", "LoopKit", "LoopKitHTTP", "LoopKitHTTPTesting"],
            path: "Examples/ProcessRunner/Tests/ProcessRunnerTests"
        ),
        // Every ```swift block of the README and the DocC articles, compiled (Scripts/article-examples.py).
        .testTarget(
            name: "ArticleExampleTests",
            dependencies: [
                "LoopKit", "LoopKitExecutors", "LoopKitHTTP", "LoopKitHTTPClient", "LoopKitHTTPTesting", "LoopKitMetrics", "LoopKitNet",
                "LoopKitNetTesting", "LoopKitTesting", "LoopKitTLS",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            // The examples show values they do not go on to use; errors still fail the build.
            swiftSettings: [.unsafeFlags(["-suppress-warnings"])]
        ),
        .testTarget(
            name: "LoopKitNetTests",
            dependencies: ["LoopKit", "LoopKitNet", "LoopKitTLS", "LoopKitTesting", "LoopKitNetTesting", "TestSupport"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
