import Dispatch
import Logging
import LoopKit
import LoopKitHTTP
import LoopKitNet

/// The routes on one loop of a running ``LoopGroup`` (the test's, shared with the state its routes use),
/// reached through an in-memory connection pair made on that loop: no socket, real threads, real time.
/// The test's thread waits for what arrives, as ``LiveTransport`` does.
final class GroupInMemoryTransport: HTTPTestTransport {
    private let loop: EventLoop
    /// Loop-confined: reached on its loop's thread only.
    private let host: LoopBound<HTTPConnectionHost>
    private let client: Connection
    private let inbox = TransportInbox()
    private var isShutDown = false

    /// Serves on `group.next()`: successive clients of one group take its loops in turn.
    init(router: HTTPRouter, configuration: HTTPServer.Configuration, group: LoopGroup, logger: Logger) throws {
        let loop = group.next()
        self.loop = loop
        var options = ConnectionOptions()
        options.writeHighWaterMark = configuration.writeHighWaterMark
        options.writeLowWaterMark = configuration.writeLowWaterMark
        let inbox = inbox, pairOptions = options
        do {
            (host, client) = try loop.invokeAndWait {
                let host = LoopBound(try HTTPConnectionHost(loop: loop, configuration: configuration, router: router, logger: logger),
                                     on: loop)
                let (client, server) = try Connection.makeInMemoryPair(on: loop, options: pairOptions)
                inbox.fill(from: client)
                host.value.serve(server)
                return (host, client)
            }
        } catch {
            throw HTTPTestClientError.cannotStart("\(error)")
        }
    }

    deinit { shutDown() }

    func send(_ bytes: [UInt8]) throws {
        let client = client
        try loop.invokeAndWait { try client.write(Bytes(bytes)) }
    }

    func takeReceived() -> [UInt8] { inbox.take() }

    var isClosedByServer: Bool { inbox.isClosed }

    func waitForProgress() throws -> Bool { inbox.wait(upTo: LiveTransport.safetyTimeout) }

    func runUntilIdle() throws {
        // As live: two drains of the serving loop, by which time the work queued by the iteration that
        // wrote the last response has run.
        for _ in 0..<2 { try loop.invokeAndWait {} }
    }

    func advance(by duration: Duration) throws { TransportInbox.sleep(for: duration) }

    func closeClient() throws {
        let client = client
        try loop.invokeAndWait { client.close() }
    }

    func shutDown() {
        guard !isShutDown else { return }
        isShutDown = true
        let client = client
        do {
            try host.invokeAndWait { host in
                host.shutdown(deadline: .zero) {}
                client.abort()
            }
        } catch {
            // The group has shut down already, and the connections with it. The group is the test's: it
            // stays up otherwise.
        }
    }
}
