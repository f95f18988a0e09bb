// swift-tools-version: 6.2
import PackageDescription

// LoopKit's benchmarks, a package of their own so the comparison peers (SwiftNIO, Dispatch, Foundation)
// never become dependencies of the library. Run with `swift run -c release LoopKitBenchmarks`
// (`make bench` from the repository root); `--quick` for a smoke run, `--json` for machine-readable rows.
// The scripts beside this file start the other products as processes of their own (servers, load
// generators, and the main-thread and executor figures, whose runtimes belong to a whole process).
let package = Package(
    name: "LoopKitBenchmarks",
    dependencies: [
        .package(name: "LoopKit", path: "../"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        // The HTTPS peer (NIOHTTPPeer --tls-cert/--tls-key). It builds BoringSSL from source: Benchmarks only.
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        // HTTP peers of LoopKitHTTP (Benchmarks/http-bench.sh starts them as pinned subprocesses).
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        // The WebSocket peer of LoopKitHTTP (Benchmarks/ws-bench.sh).
        .package(url: "https://github.com/hummingbird-project/hummingbird-websocket", from: "2.8.1"),
        // LoopKitHTTP's logger, silenced in the idle keep-alive connection row's child.
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        // The client peer of LoopKitHTTPClient (Benchmarks/client-bench.sh).
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        // The HTTP/2 server peer of LoopKitHTTP (Benchmarks/h2-bench.sh).
        .package(url: "https://github.com/apple/swift-nio-http2", from: "1.46.0"),
    ],
    targets: [
        .executableTarget(
            name: "LoopKitBenchmarks",
            dependencies: [
                .product(name: "LoopKit", package: "LoopKit"),
                .product(name: "LoopKitNet", package: "LoopKit"),
                // The idle keep-alive connection row (`idlemem`) serves HTTP with LoopKitHTTP and NIOHTTP1.
                .product(name: "LoopKitHTTP", package: "LoopKit"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]
        ),
        // OpenSSL's SHA-256 for the NIO peer's streamed /upload (Debian's libssl-dev, as LoopKit's).
        .systemLibrary(name: "CPeerOpenSSL", pkgConfig: "libcrypto", providers: [.apt(["libssl-dev"])]),
        // A minimal NIOHTTP1 server: /hello, /work run inline or on NIOThreadPool, streamed /upload and /echo;
        // over HTTPS with NIOSSL when given --tls-cert and --tls-key.
        .executableTarget(
            name: "NIOHTTPPeer",
            dependencies: [
                "CPeerOpenSSL",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]
        ),
        // Hummingbird 2 serving /hello.
        .executableTarget(
            name: "HummingbirdPeer",
            dependencies: [.product(name: "Hummingbird", package: "hummingbird")]
        ),
        // A minimal NIOWebSocket echo server (one event loop): NIOWebSocketServerUpgrader on GET /ws/echo and a
        // handler writing each text or binary frame back unmasked. The peer of LoopKitHTTP in `make bench-ws`.
        .executableTarget(
            name: "NIOWebSocketPeer",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
            ]
        ),
        // hummingbird-websocket 2 echoing every message of GET /ws/echo (one event loop).
        .executableTarget(
            name: "HummingbirdWebSocketPeer",
            dependencies: [
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
            ]
        ),
        // The WebSocket load generator of `make bench-ws`: N connections over plain sockets and poll(2), each
        // with one masked text message in flight, every echo checked; or N idle upgraded connections.
        .executableTarget(name: "WebSocketLoad", dependencies: ["CPeerOpenSSL"]),
        // Server-sent events fan-out: one job's progress to 1,000 subscribers on one LoopKit loop.
        .executableTarget(
            name: "SSEFanout",
            dependencies: [
                .product(name: "LoopKit", package: "LoopKit"),
                .product(name: "LoopKitHTTP", package: "LoopKit"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The main thread's runtime (`make bench-main`): MainActor.run and DispatchQueue.main round trips from
        // another thread with the main thread in EventLoop.main.run(), RunLoop.main.run() or dispatchMain().
        .executableTarget(
            name: "MainThreadHop",
            dependencies: [.product(name: "LoopKit", package: "LoopKit"), .product(name: "LoopKitExecutors", package: "LoopKit")]
        ),
        // Task.sleep(for: 1 ms) lateness on a LoopKit loop against Swift's default executor (`make bench-main`).
        .executableTarget(
            name: "TaskSleepLateness",
            dependencies: [.product(name: "LoopKit", package: "LoopKit")]
        ),
        // The work pool and files (`make bench-pool`): offload round trips against NIOThreadPool, a 1 GiB file
        // read through the pool against NIOFileSystem, in one process, alternated.
        .executableTarget(
            name: "PoolBench",
            dependencies: [
                .product(name: "LoopKit", package: "LoopKit"),
                .product(name: "LoopKitNet", package: "LoopKit"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "_NIOFileSystem", package: "swift-nio"),
            ]
        ),
        // Actor hops and a task-group fan-out with LoopKitExecutors' group, Swift's own pool or NIO's group as
        // Swift's default executor, one process each (`make bench-main`).
        .executableTarget(
            name: "GlobalExecutorHops",
            dependencies: [
                .product(name: "LoopKit", package: "LoopKit"),
                .product(name: "LoopKitExecutors", package: "LoopKit"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        // UDP echo, 64-byte datagrams, one loop (Benchmarks/udp-bench.sh): NIO's DatagramBootstrap with recvmmsg
        // reads, libuv's uv_udp_t (Debian's libuv1-dev) with UV_UDP_RECVMMSG, and the C load generator.
        .executableTarget(
            name: "NIOUDPEchoPeer",
            dependencies: [.product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio")]
        ),
        .systemLibrary(name: "CPeerUV", pkgConfig: "libuv", providers: [.apt(["libuv1-dev"])]),
        .executableTarget(name: "UVUDPEchoPeer", dependencies: ["CPeerUV"]),
        .executableTarget(name: "UDPLoad"),
        // Spawn and wait for /bin/true ×1,000 (Benchmarks/spawn-bench.sh): ChildProcess vs Foundation's Process,
        // and libuv's uv_spawn.
        .executableTarget(
            name: "SpawnBench",
            dependencies: [.product(name: "LoopKit", package: "LoopKit"), .product(name: "LoopKitNet", package: "LoopKit")]
        ),
        .executableTarget(name: "UVSpawnBench", dependencies: ["CPeerUV"]),
        // A minimal swift-nio-http2 server (one event loop, h2c by prior knowledge or h2 over TLS): GET /hello and a
        // streamed POST /upload (count + SHA-256).
        .executableTarget(
            name: "NIOHTTP2Peer",
            dependencies: [
                "CPeerOpenSSL",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]
        ),
        // The HTTP client figures (Benchmarks/client-bench.sh): 64 concurrent keep-alive GET /hello and a 1 GiB
        // download with LoopKitHTTPClient and with AsyncHTTPClient, each on one event loop, against LoopDemo serve.
        .executableTarget(
            name: "ClientBench",
            dependencies: [
                .product(name: "LoopKit", package: "LoopKit"),
                .product(name: "LoopKitNet", package: "LoopKit"),
                .product(name: "LoopKitHTTPClient", package: "LoopKit"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
