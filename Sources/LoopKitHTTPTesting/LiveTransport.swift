import Dispatch
import Logging
import LoopKit
import LoopKitHTTP
import LoopKitNet
import Synchronization

/// The routes served by a real ``HTTPServer`` on 127.0.0.1 (port 0; one loop thread, or the test's group),
/// reached by a LoopKitNet client connection on a loop of its own; the test's thread waits for what arrives.
final class LiveTransport: HTTPTestTransport {
    /// How long the test's thread waits for anything to arrive before giving up (a hung test's safety net).
    static let safetyTimeout: Duration = .seconds(10)

    private let serverGroup: LoopGroup
    /// Whether the server's group is the transport's own (shut down with it) rather than the test's.
    private let ownsServerGroup: Bool
    private let clientGroup: LoopGroup
    private let server: HTTPServer
    private let connection: Connection
    private let inbox: TransportInbox
    private var isShutDown = false

    let port: Int

    /// Serves on `group` when given (the test's: left running at the end), else on a one-loop group of
    /// its own.
    init(router: HTTPRouter, configuration: HTTPServer.Configuration, group: LoopGroup? = nil, logger: Logger) throws {
        var configuration = configuration
        configuration.host = "127.0.0.1"
        configuration.port = 0
        serverGroup = try group ?? LoopGroup(threads: 1, name: "http-test-server")
        ownsServerGroup = group == nil
        clientGroup = try LoopGroup(threads: 1, name: "http-test-client")
        server = HTTPServer(group: serverGroup, configuration: configuration, router: router, logger: logger)
        do {
            port = try server.start()
            let inbox = TransportInbox()
            self.inbox = inbox
            connection = try Self.connect(port: port, on: clientGroup.loops[0], inbox: inbox)
        } catch {
            server.beginShutdown()
            if ownsServerGroup { serverGroup.shutdown() }
            clientGroup.shutdown()
            throw HTTPTestClientError.cannotStart("\(error)")
        }
    }

    deinit { shutDown() }

    /// Connects to the server and installs the inbox's callbacks on the client's loop; waits for both.
    private static func connect(port: Int, on loop: EventLoop, inbox: TransportInbox) throws -> Connection {
        let outcome = Lock<Result<Connection, any Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
        // A task on the client's loop thread, not on Swift's cooperative pool: the test's thread, waiting
        // below, may itself be one of the pool's few threads.
        Task(executorPreference: loop) {
            do {
                let connection = try await Connection.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: port), on: loop)
                try await loop.perform { inbox.fill(from: connection) }
                outcome.withLock { $0 = .success(connection) }
            } catch {
                outcome.withLock { $0 = .failure(error) }
            }
            done.signal()
        }
        guard done.wait(timeout: .now() + .seconds(10)) == .success, let result = outcome.withLock({ $0 }) else {
            throw HTTPTestClientError.cannotStart("no connection to 127.0.0.1:\(port) within 10 s")
        }
        return try result.get()
    }

    func send(_ bytes: [UInt8]) throws {
        let connection = connection
        try clientGroup.loops[0].invokeAndWait {
            try connection.write(Bytes(bytes))
        }
    }

    func takeReceived() -> [UInt8] { inbox.take() }

    var isClosedByServer: Bool { inbox.isClosed }

    func waitForProgress() throws -> Bool { inbox.wait(upTo: Self.safetyTimeout) }

    func runUntilIdle() throws {
        // Work queued in the iteration that wrote the last response runs in that iteration's drain, or in
        // the next one when it was queued from a drain. The first job below runs in that drain at the
        // earliest (perhaps before that work, in the same drain); the second, queued once the first has
        // run, in a later drain: by then that work has run.
        for _ in 0..<2 { for loop in serverGroup.loops { try loop.invokeAndWait {} } }
    }

    func advance(by duration: Duration) throws {
        // Real time must pass for the server's timers; arrivals meanwhile are kept by the inbox.
        TransportInbox.sleep(for: duration)
    }

    func closeClient() throws {
        let connection = connection
        try clientGroup.loops[0].invokeAndWait { connection.close() }
    }

    func shutDown() {
        guard !isShutDown else { return }
        isShutDown = true
        let connection = connection
        do {
            try clientGroup.loops[0].invokeAndWait { connection.abort() }
        } catch {
            // The client's loop has shut down already, and the connection with it.
        }
        let stopped = DispatchSemaphore(value: 0)
        let server = server
        Task(executorPreference: serverGroup.loops[0]) {  // off the cooperative pool, as in `connect`
            await server.shutdown()
            stopped.signal()
        }
        stopped.wait()
        if ownsServerGroup { serverGroup.shutdown() }
        clientGroup.shutdown()
    }
}
