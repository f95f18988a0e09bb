import LoopKit
import LoopKitNet
import LoopKitTLS

/// Two ``Connection``s joined in memory on a ``LoopDriver``'s loop, for testing connection handlers
/// step by step without sockets (NIO's `EmbeddedChannel`, for LoopKit).
///
/// ```swift
/// let driver = try LoopDriver()
/// let pair = try InMemoryConnectionPair(driver: driver)
/// echo(pair.server)                      // the handler under test, as it runs on real sockets
/// try pair.client.write("ping")
/// try driver.step()                      // the server's read callback runs and writes back
/// try driver.step()                      // the client's read callback runs
/// ```
///
/// The connections are real ``Connection``s (joined in memory rather than by sockets), so the same
/// handler code runs on both, with the same watermarks and backpressure: a side that stops consuming
/// stops the other side's output from moving once its read high-water mark is reached, and the server
/// end, like a connection a listener accepts, stops reading while its own output is above the write
/// high-water mark. Each write moves what the partner has room for into its input at once; the
/// partner's callbacks run in the driver's next step. Read and write timeouts do not apply (no socket).
///
/// **TLS in memory**: ``init(driver:options:serverTLS:clientTLS:serverName:)`` runs TLS over the pair —
/// the same OpenSSL handshake, records, alerts and `close_notify` as on a socket, on the stepped loop —
/// so HTTPS handlers and TLS failures are tested deterministically.
///
/// A pair belongs to the driver's thread; call everything there. Async handlers run in a `Task` whose
/// executor preference is `driver.loop`, and advance as the driver steps.
public struct InMemoryConnectionPair: Sendable {
    /// One end, in a client's role (like a connection opened with `connect`).
    public let client: Connection
    /// The other end, in a server's role (like an accepted connection): where the handler under test
    /// usually runs.
    public let server: Connection

    /// Creates the pair on `driver`'s loop.
    /// - Parameters:
    ///   - driver: The driver whose loop the connections live on.
    ///   - options: Both ends' settings (watermarks matter; socket options are ignored).
    /// - Throws: ``NetError/loopShutDown`` when the driver's loop has shut down.
    ///
    /// Call on the driver's thread.
    public init(driver: LoopDriver, options: ConnectionOptions = .init()) throws(NetError) {
        (client, server) = try Connection.makeInMemoryPair(on: driver.loop, options: options)
    }

    /// Creates the pair speaking TLS: the server end with `serverTLS`, the client end with `clientTLS`,
    /// asking for `serverName`. Runs the driver until both handshakes are done, so the connections are
    /// ready to use when it returns (their ``Connection/tlsInfo`` says what was agreed).
    ///
    /// - Parameters:
    ///   - driver: The driver whose loop the connections live on.
    ///   - options: Both ends' settings.
    ///   - serverTLS: A server ``TLSContext``.
    ///   - clientTLS: A client ``TLSContext``; when it verifies, the server's certificate must name
    ///     `serverName` and chain to its trust roots.
    ///   - serverName: The name the client asks for (SNI) and checks.
    /// - Throws: ``NetError/tls(_:)`` with OpenSSL's reason when a handshake fails (both ends have ended
    ///   then); ``NetError/loopShutDown`` when the driver's loop has shut down.
    ///
    /// Call on the driver's thread.
    public init(driver: LoopDriver, options: ConnectionOptions = .init(), serverTLS: TLSContext, clientTLS: TLSContext,
                serverName: String = "localhost") throws(NetError) {
        let outcome = HandshakeOutcome()
        (client, server) = try Connection.makeInMemoryPair(
            on: driver.loop, options: options, security: InMemorySecurity(server: serverTLS, client: clientTLS, serverName: serverName),
            handshaken: { outcome.result = $0.map { .failure($0) } ?? .success(()) })
        do {
            while outcome.result == nil, driver.hasPendingWork { try driver.step() }
        } catch {
            throw .loopShutDown
        }
        switch outcome.result {
        case .success?: return
        case .failure(let error)?: throw error
        case nil: throw .tls("the in-memory handshake stopped before it finished")
        }
    }
}

/// Where the pair's handshake outcome lands: written and read on the driver's thread only.
private final class HandshakeOutcome {
    var result: Result<Void, NetError>?
}
