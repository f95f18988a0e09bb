// swift-tools-version: 6.2
// Clients of LoopKit's public API built the way users ship them: `swift build -c release` from a package of
// its own, where LoopKit's @inlinable code is inlined into these modules and optimised with them. `make test`
// builds and runs both; each exits non-zero when any check fails.
import PackageDescription

let package = Package(
    name: "ReleaseClient",
    dependencies: [.package(name: "LoopKit", path: "../..")],
    targets: [
        // The loop, executors and LoopBound: links the LoopKit product only.
        .executableTarget(
            name: "ReleaseClient",
            dependencies: [.product(name: "LoopKit", package: "LoopKit")]
        ),
        // A server and its clients over 127.0.0.1: LoopKitHTTP's streamed request bodies and WebSocket
        // messages, LoopKitNet's `inbound`, each read with `for await` (the single-consumer bridge, inlined
        // into this module through `WebSocket.Messages.Iterator.next(isolation:)`).
        .executableTarget(
            name: "ReleaseHTTPClient",
            dependencies: [
                .product(name: "LoopKit", package: "LoopKit"),
                .product(name: "LoopKitNet", package: "LoopKit"),
                .product(name: "LoopKitHTTP", package: "LoopKit"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
