// swift-tools-version: 6.2
import PackageDescription

// LoopKit's fuzz targets, a package of their own beside Benchmarks/ so the library never builds with
// libFuzzer. Each executable exports `LLVMFuzzerTestOneInput`; libFuzzer supplies `main`. Build each with
// `swift build --sanitize=fuzzer -Xswiftc -sanitize=fuzzer,address --product <target>` (`make fuzz` and
// `make test-fuzz-corpus` from the repository root do; the Makefile says why the flags are spelled so); the
// checked-in seeds and regression inputs are in Corpus/<target>/.
//
// The targets reach LoopKitHTTP's internal parsers (the WebSocket frame parser, the inflater) with
// `@testable import`, which a debug build allows: the fuzz targets are built in debug, with assertions on.
let package = Package(
    name: "LoopKitFuzz",
    dependencies: [
        .package(name: "LoopKit", path: "../"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
    ],
    targets: [
        // What the targets share: the request parser driven in pieces, a deterministic split generator, checks.
        .target(
            name: "FuzzSupport",
            dependencies: [
                .product(name: "LoopKitHTTP", package: "LoopKit"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ]
        ),
        // The HTTP/1.1 request parser fed the same bytes whole, byte by byte and in pseudo-random pieces:
        // the same requests, bodies, trailers and error every time.
        .executableTarget(
            name: "RequestParserFuzzer",
            dependencies: ["FuzzSupport", .product(name: "LoopKitHTTP", package: "LoopKit")]
        ),
        // The chunked decoder behind a fixed head: arbitrary bodies split against whole, and valid encodings of
        // arbitrary chunks decoded to exactly those bytes.
        .executableTarget(
            name: "ChunkedBodyFuzzer",
            dependencies: [
                "FuzzSupport",
                .product(name: "LoopKitHTTP", package: "LoopKit"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ]
        ),
        // The WebSocket frame parser (split against whole, lent against copied), the message assembler's two
        // paths, frames encoded again, permessage-deflate round trips and the inflater's limit.
        .executableTarget(
            name: "WebSocketFrameFuzzer",
            dependencies: ["FuzzSupport", .product(name: "LoopKitHTTP", package: "LoopKit")]
        ),
        // The TLS server fed raw bytes over the in-memory pair (OpenSSL over LoopKit's memory BIO): every
        // handshake ends, told once, and nothing leaks.
        .executableTarget(
            name: "TLSServerFuzzer",
            dependencies: [
                "FuzzSupport",
                .product(name: "LoopKitNet", package: "LoopKit"),
                .product(name: "LoopKitTLS", package: "LoopKit"),
                .product(name: "LoopKitTesting", package: "LoopKit"),
            ]
        ),
        // Query strings and authorities against references from RFC 3986 and WHATWG URL: the parser accepts a
        // Host exactly when the grammar does (else a typed error), absolute-form parts reassemble, the query's
        // lookups agree with a byte-level split and decoder, percent-decoding round trips.
        .executableTarget(
            name: "QueryAuthorityFuzzer",
            dependencies: [
                "FuzzSupport",
                .product(name: "LoopKitHTTP", package: "LoopKit"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The C ABI (loopkit.h) called in the order the input dictates on a real loop: every call returns a documented
        // code, every promised callback runs once, nothing crashes or leaks. Calls go through the header's C
        // declarations into libLoopKitC, as a C host's do.
        .executableTarget(
            name: "CABIFuzzer",
            dependencies: ["FuzzSupport", .product(name: "LoopKitC", package: "LoopKit")]
        ),
        // The server-sent event encoder against the HTML standard's event-stream decoder.
        .executableTarget(
            name: "ServerSentEventFuzzer",
            dependencies: ["FuzzSupport", .product(name: "LoopKitHTTP", package: "LoopKit")]
        ),
    ],
    swiftLanguageModes: [.v6]
)
