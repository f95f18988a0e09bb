import LoopKit
import LoopKitNet

#if canImport(Glibc)
import Glibc
#endif

/// `LoopDemo echo`: a TCP echo server on LoopKitNet's lean path, one SO_REUSEPORT listener per loop.
///
/// Each connection echoes in its read callback: the borrowed inbound bytes are copied into the output
/// (one copy) and the whole batch is sent with one `writev` when the callback returns.
public enum EchoServer {
    /// Starts the server, prints `listening on HOST:PORT` (flushed) once it accepts, and runs until
    /// SIGINT or SIGTERM; then stops accepting, closes connections gracefully and returns.
    ///
    /// - Parameters:
    ///   - host: A numeric address to bind.
    ///   - port: The port; 0 picks a free one.
    ///   - threads: How many loops accept and serve connections.
    /// - Throws: ``NetError`` when binding fails, ``EventLoopError`` when a loop cannot start.
    ///
    /// Call on the main thread: it runs a loop there for the signals.
    public static func run(host: String, port: Int, threads: Int) throws {
        let signals = try EventLoop()  // the main thread's loop, only for SIGINT/SIGTERM
        let group = try LoopGroup(threads: threads, name: "echo")
        let listener = try TCPListener.bind(host: host, port: port, on: group, onAccept: echo)
        print("listening on \(listener.localAddress)")
        fflush(nil)  // all output streams (stdout itself is not concurrency-safe to name)
        let stopping = LoopBound(false, on: signals)
        let stop: () -> Void = {
            guard !stopping.value else { return }
            stopping.value = true
            Task.detached {
                await listener.shutdown(deadline: .seconds(5))
                signals.stop()
            }
        }
        try signals.onSignal(SIGINT, stop)
        try signals.onSignal(SIGTERM, stop)
        try signals.run()
        group.shutdown()
    }

    /// The echo handler: everything read is written back at once.
    /// Call on the connection's loop's thread.
    @Sendable public static func echo(_ connection: Connection) {
        connection.onRead { bytes in
            do {
                try connection.write(copying: bytes)
            } catch {
                return bytes.count  // closing: drop the bytes
            }
            return bytes.count
        }
    }
}
