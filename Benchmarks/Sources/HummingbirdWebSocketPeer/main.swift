// hummingbird-websocket 2 with one event loop thread, the framework peer of LoopKitHTTP's `/ws/echo` in
// `make bench-ws`: `GET /ws/echo` upgraded, every message (assembled by WSCore, text as a String) written
// back; no permessage-deflate. Prints `listening on HOST:PORT` when ready.
import Hummingbird
import HummingbirdWebSocket
import Logging
import NIOPosix
#if canImport(Glibc)
import Glibc
#endif

let arguments = Array(CommandLine.arguments.dropFirst())
let port = arguments.firstIndex(of: "--port").flatMap { $0 + 1 < arguments.count ? Int(arguments[$0 + 1]) : nil } ?? 0

var logger = Logger(label: "hummingbird-websocket-peer")
logger.logLevel = .warning
let app = Application(
    router: Router(),
    server: .http1WebSocketUpgrade { request, _, _ in
        guard request.path == "/ws/echo" else { return .dontUpgrade }
        return .upgrade([:]) { inbound, outbound, _ in
            for try await message in inbound.messages(maxSize: 1 << 20) {
                switch message {
                case .text(let text): try await outbound.write(.text(text))
                case .binary(let buffer): try await outbound.write(.binary(buffer))
                }
            }
        }
    },
    configuration: .init(address: .hostname("127.0.0.1", port: port), backlog: 4096),
    onServerRunning: { channel in
        print("listening on 127.0.0.1:\(channel.localAddress?.port ?? port)")
        fflush(nil)
    },
    eventLoopGroupProvider: .shared(MultiThreadedEventLoopGroup(numberOfThreads: 1)),
    logger: logger
)
try await app.runService()
