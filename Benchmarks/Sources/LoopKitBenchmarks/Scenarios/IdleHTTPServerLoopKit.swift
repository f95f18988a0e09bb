import Foundation
import LoopKit
import LoopKitHTTP
import Logging

/// The `http` server of ``IdleConnectionServer``: LoopKitHTTP's `HTTPServer` holding idle keep-alive
/// connections, each of which has been answered one request.
///
/// One `LoopGroup(threads: 1)`, a router with `GET /hello` answering
/// "Hello, World!" (as LoopDemo's `serve`), backlog 4096, an idle timeout of 120 s so that no connection
/// is closed during the measurement, the logger silenced (its access log would take stdout, the child's
/// answer to the parent). The handler counts the requests it answers (an `Atomic`); the accepted
/// connections are the server's `openConnectionCount()`.
extension IdleConnectionServer {
    static func startLoopKitHTTP() throws -> Server {
        let group = try LoopGroup(threads: 1, name: "idlemem-http")
        let served = Counter()
        var router = HTTPRouter()
        router.get("/hello") { _ in
            served.value.add(1, ordering: .relaxed)
            return .text("Hello, World!")
        }
        var configuration = HTTPServer.Configuration()
        configuration.backlog = 4096
        configuration.idleTimeout = .seconds(120)
        let logger = Logger(label: "idlemem-http", factory: { _ in SwiftLogNoOpLogHandler() })
        let server = HTTPServer(group: group, configuration: configuration, router: router, logger: logger)
        let port = try server.start()
        return Server(port: port, accepted: { openConnections(of: server) },
                      served: { served.value.load(ordering: .relaxed) }) {
            let ended = DispatchSemaphore(value: 0)
            Task.detached {
                await server.shutdown()
                ended.signal()
            }
            ended.wait()
            group.shutdown()
        }
    }

    /// The server's open connections, asked from this (non-loop) thread; 0 when the loop does not answer
    /// within 5 s (the child's own deadline then reports the failure).
    private static func openConnections(of server: HTTPServer) -> Int {
        let count = Counter()
        let answered = DispatchSemaphore(value: 0)
        Task.detached {
            count.value.store((try? await server.openConnectionCount()) ?? 0, ordering: .relaxed)
            answered.signal()
        }
        guard answered.wait(timeout: .now() + 5) == .success else { return 0 }
        return count.value.load(ordering: .relaxed)
    }
}
