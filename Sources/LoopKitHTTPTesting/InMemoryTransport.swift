import Logging
import LoopKit
import LoopKitHTTP
import LoopKitNet
import LoopKitTLS
import LoopKitNetTesting
import LoopKitTesting

/// The routes on a ``LoopDriver``'s loop, reached through an ``InMemoryConnectionPair``: deterministic,
/// on virtual time. Belongs to the thread that created it (the driver's): off it, calls throw
/// ``HTTPTestClientError/wrongThread(_:)`` rather than reach the connection's preconditions.
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

    /// Serves on `driver`'s loop when given (the test's, which other clients and the routes' state may
    /// share), else on a driver of its own.
    /// With `clientTLS` (and `configuration.tls`), the pair speaks TLS, the client asking for `serverName`.
    init(router: HTTPRouter, configuration: HTTPServer.Configuration, driver: LoopDriver? = nil, clientTLS: TLSContext? = nil,
         serverName: String = "localhost", logger: Logger) throws {
        self.driver = try driver ?? LoopDriver()
        host = try HTTPConnectionHost(loop: self.driver.loop, configuration: configuration, router: router, logger: logger)
        var options = ConnectionOptions()
        options.writeHighWaterMark = configuration.writeHighWaterMark
        options.writeLowWaterMark = configuration.writeLowWaterMark
        if let clientTLS, let serverTLS = configuration.tls {
            pair = try InMemoryConnectionPair(driver: self.driver, options: options, serverTLS: serverTLS, clientTLS: clientTLS,
                                              serverName: serverName)
        } else {
            pair = try InMemoryConnectionPair(driver: self.driver, options: options)
        }
        let inbox = inbox
        pair.client.onRead { bytes in
            inbox.bytes.append(contentsOf: bytes)
            return bytes.count
        }
        pair.client.onClose { _ in inbox.closed = true }
        host.serve(pair.server)
    }

    /// The message for a call off the driver's thread: the test client's rule and the fix, not the
    /// connection's.
    static let wrongThreadMessage = """
        HTTPTestClient called off its driver's thread: a client made with HTTPTestClient(router:driver:) belongs \
        to the thread that made the LoopDriver, and an async test moves to another thread at an await. Make the \
        client with HTTPTestClient(router:) (it keeps its loop on a thread of its own) and call \
        `try await client.execute(…)`, or make the driver and the client after the test's last await.
        """

    /// Throws ``HTTPTestClientError/wrongThread(_:)`` off the driver's thread.
    private func checkThread() throws(HTTPTestClientError) {
        guard driver.loop.isCurrent else { throw .wrongThread(Self.wrongThreadMessage) }
    }

    func send(_ bytes: [UInt8]) throws {
        try checkThread()
        try pair.client.write(Bytes(bytes))
    }

    func takeReceived() -> [UInt8] {
        guard driver.loop.isCurrent else { return [] }  // the next throwing call says why
        defer { inbox.bytes.removeAll(keepingCapacity: true) }
        return inbox.bytes
    }

    var isClosedByServer: Bool {
        driver.loop.isCurrent && inbox.closed  // off its thread: the next throwing call says why
    }

    /// How long an idle loop waits for a handler's answer from another thread (an actor, another running
    /// loop's `perform`) before the client calls it idle.
    static let crossThreadGrace: Duration = .seconds(2)

    func waitForProgress() throws -> Bool {
        try checkThread()
        guard driver.hasPendingWork || waitForWorkFromOtherThreads() else { return false }
        try driver.step()
        return true
    }

    /// While a handler task has not answered, its answer may be on its way from another thread: waits
    /// (real time, at most ``crossThreadGrace``) for work to be queued on the loop. Nothing happens on the
    /// driver's loop meanwhile: the steps stay the test's.
    private func waitForWorkFromOtherThreads() -> Bool {
        guard host.handlerTasksInFlight > 0 else { return false }
        let deadline = ContinuousClock.now + Self.crossThreadGrace
        var pause = Duration.microseconds(20)
        while !driver.hasPendingWork {
            guard ContinuousClock.now < deadline else { return false }
            TransportInbox.sleep(for: pause)
            pause = min(pause * 2, .milliseconds(1))
        }
        return true
    }

    func runUntilIdle() throws {
        try checkThread()
        try driver.runUntilIdle()
    }

    func advance(by duration: Duration) throws {
        try checkThread()
        try driver.advance(by: duration)
    }

    func closeClient() throws {
        try checkThread()
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
