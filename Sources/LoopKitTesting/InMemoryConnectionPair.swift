import LoopKit
import LoopKitNet

/// Two ``TCPConnection``s joined in memory on a ``LoopDriver``'s loop, for testing connection handlers
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
/// The connections are real ``TCPConnection``s (joined in memory rather than by sockets), so the same
/// handler code runs on both, with the same watermarks and backpressure: a side that stops consuming
/// stops the other side's output from moving once its read high-water mark is reached, and the server
/// end, like a connection a listener accepts, stops reading while its own output is above the write
/// high-water mark. Each write moves what the partner has room for into its input at once; the
/// partner's callbacks run in the driver's next step. Read and write timeouts do not apply (no socket).
///
/// A pair belongs to the driver's thread; call everything there. Async handlers run in a `Task` whose
/// executor preference is `driver.loop`, and advance as the driver steps.
public struct InMemoryConnectionPair: Sendable {
    /// One end, in a client's role (like a connection opened with `connect`).
    public let client: TCPConnection
    /// The other end, in a server's role (like an accepted connection): where the handler under test
    /// usually runs.
    public let server: TCPConnection

    /// Creates the pair on `driver`'s loop.
    /// - Parameters:
    ///   - driver: The driver whose loop the connections live on.
    ///   - options: Both ends' settings (watermarks matter; socket options are ignored).
    /// - Throws: ``NetError/loopShutDown`` when the driver's loop has shut down.
    ///
    /// Call on the driver's thread.
    public init(driver: LoopDriver, options: ConnectionOptions = .init()) throws(NetError) {
        (client, server) = try TCPConnection.makeInMemoryPair(on: driver.loop, options: options)
    }
}
