// Hummingbird 2 with one event loop thread, the framework peer of LoopKitHTTP in `make bench`:
// `GET /hello`; with `--root DIR`, the directory's files under `/files/` through Hummingbird's own
// `FileMiddleware` (its defaults: NIOThreadPool.singleton, no cache, validators and one range), the peer of
// `LoopDemo serve --root` in `make bench-files`. Prints `listening on HOST:PORT` when ready.
import Hummingbird
import Logging
import NIOPosix
#if canImport(Glibc)
import Glibc
#endif

let arguments = Array(CommandLine.arguments.dropFirst())
let port = arguments.firstIndex(of: "--port").flatMap { $0 + 1 < arguments.count ? Int(arguments[$0 + 1]) : nil } ?? 0

let root = arguments.firstIndex(of: "--root").flatMap { $0 + 1 < arguments.count ? arguments[$0 + 1] : nil }

var logger = Logger(label: "hummingbird-peer")
logger.logLevel = .warning
let router = Router()
if let root {
    router.add(middleware: FileMiddleware(root, urlBasePath: "/files", logger: logger))
}
router.get("hello") { _, _ in "Hello, World!" }
let app = Application(
    router: router,
    configuration: .init(address: .hostname("127.0.0.1", port: port)),
    onServerRunning: { channel in
        print("listening on 127.0.0.1:\(channel.localAddress?.port ?? port)")
        fflush(nil)
    },
    eventLoopGroupProvider: .shared(MultiThreadedEventLoopGroup(numberOfThreads: 1)),
    logger: logger
)
try await app.runService()
