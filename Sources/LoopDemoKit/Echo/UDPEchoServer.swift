import LoopKit
import LoopKitNet

#if canImport(Glibc)
import Glibc
#endif

/// `LoopDemo udp-echo`: a UDP echo server on one loop: each batch one `recvmmsg` took is answered with
/// one `sendmmsg` when the handler returns.
public enum UDPEchoServer {
    /// Binds, prints `listening on HOST:PORT (udp)` (flushed), and echoes every datagram to its sender until
    /// SIGINT or SIGTERM; then closes the socket and returns.
    ///
    /// - Parameters:
    ///   - host: A numeric address to bind.
    ///   - port: The port; 0 picks a free one.
    ///   - batchSize: The most datagrams one `recvmmsg` takes.
    /// - Throws: ``NetError`` when binding fails, ``EventLoopError`` when the loop cannot start.
    ///
    /// Call on the main thread: it runs the loop there.
    public static func run(host: String, port: Int, batchSize: Int = 64) throws {
        let loop = try EventLoop()
        var options = UDPOptions()
        options.receiveBatchSize = batchSize
        let socket = try UDPSocket.bind(host: host, port: port, on: loop, options: options)
        echo(socket)
        print("listening on \(socket.localAddress) (udp)")
        fflush(nil)
        let stop: () -> Void = {
            socket.close()
            loop.stop()
        }
        try loop.onSignal(SIGINT, stop)
        try loop.onSignal(SIGTERM, stop)
        try loop.run()
        loop.shutdown()
    }

    /// The echo handler: every datagram sent back to its sender, from the receive buffers (no address
    /// formatted). A datagram the send queue cannot take is dropped, as the network would.
    /// Call on the socket's loop's thread.
    public static func echo(_ socket: UDPSocket) {
        socket.onDatagrams { batch in
            for datagram in batch {
                do {
                    try socket.write(copying: datagram.payload, toSenderOf: datagram)
                } catch {
                    return  // closed, or the queue is full: drop the rest of the batch
                }
            }
        }
    }
}
