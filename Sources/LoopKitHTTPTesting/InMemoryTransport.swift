import Logging
import LoopKit
import LoopKitHTTP
import LoopKitNet
import LoopKitNetTesting
import LoopKitTesting

/// The routes on a ``LoopDriver``'s loop, reached through an ``InMemoryConnectionPair``: deterministic,
/// on virtual time. Belongs to the thread that created it (the driver's).
final class InMemoryTransport: HTTPTestTransport {
    let driver: LoopDriver
    private let host: HTTPConnectionHost
    private let pair: InMemoryConnectionPair
    private let inbox = Inbox()
    private var isShutDown = false

    /// What the client end has received, filled by its callbacks on the driver's loop (this thread).
    private final class Inbox {
        var bytes: [UInt8] = []
        var closed = false
    }

    init(router: HTTPRouter, configuration: HTTPServer.Configuration, logger: Logger) throws {
        driver = try LoopDriver()
        host = try HTTPConnectionHost(loop: driver.loop, configuration: configuration, router: router, logger: logger)
        var options = ConnectionOptions()
        options.writeHighWaterMark = configuration.writeHighWaterMark
        options.writeLowWaterMark = configuration.writeLowWaterMark
        pair = try InMemoryConnectionPair(driver: driver, options: options)
        let inbox = inbox
        pair.client.onRead { bytes in
            inbox.bytes.append(contentsOf: bytes)
            return bytes.count
        }
        pair.client.onClose { _ in inbox.closed = true }
        host.serve(pair.server)
    }

    func send(_ bytes: [UInt8]) throws {
        try pair.client.write(Bytes(bytes))
    }

    func takeReceived() -> [UInt8] {
        defer { inbox.bytes.removeAll(keepingCapacity: true) }
        return inbox.bytes
    }

    var isClosedByServer: Bool { inbox.closed }

    func waitForProgress() throws -> Bool {
        guard driver.hasPendingWork else { return false }
        try driver.step()
        return true
    }

    func runUntilIdle() throws {
        try driver.runUntilIdle()
    }

    func advance(by duration: Duration) throws {
        try driver.advance(by: duration)
    }

    func closeClient() throws {
        pair.client.close()
        try driver.runUntilIdle()
    }

    func shutDown() {
        guard !isShutDown else { return }
        isShutDown = true
        host.shutdown(deadline: .zero) {}
        pair.client.abort()
        do {
            try driver.runUntilIdle()
        } catch {
            // Work that re-queues itself forever: the driver and its loop go away with this transport.
        }
    }
}
