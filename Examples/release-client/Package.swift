// swift-tools-version: 6.2
// A client of LoopKit's public API built the way users ship it: `swift build -c release` from a package of
// its own, where LoopKit's @inlinable code is inlined into this module and optimised with it. `make test`
// builds and runs it; it exits non-zero when any check fails.
import PackageDescription

let package = Package(
    name: "ReleaseClient",
    dependencies: [.package(name: "LoopKit", path: "../..")],
    targets: [
        .executableTarget(
            name: "ReleaseClient",
            dependencies: [.product(name: "LoopKit", package: "LoopKit")]
        ),
    ],
    swiftLanguageModes: [.v6]
)
