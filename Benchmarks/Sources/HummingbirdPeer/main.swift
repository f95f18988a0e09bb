// Hummingbird 2 with one event loop thread, the framework peer of LoopKitHTTP in `make bench`:
// `GET /hello`. Prints `listening on HOST:PORT` when ready.
import Hummingbird
import Logging
import NIOPosix
#if canImport(Glibc)
import Glibc
#endif

var port = 0
var arguments = CommandLine.arguments.dropFirst().makeIterator()
while let argument = arguments.next() {
    if argument == "--port" { port = Int(arguments.next() ?? "0") ?? 0 }
}

let router = Router()
router.get("hello") { _, _ in "Hello, World!" }
var logger = Logger(label: "hummingbird-peer")
logger.logLevel = .warning
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
