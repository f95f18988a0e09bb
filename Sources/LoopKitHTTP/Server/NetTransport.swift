import LoopKitNet

/// ``HTTPTransport`` over a LoopKitNet ``TCPConnection`` (a libevent bufferevent).
///
/// The connection's lean read path lends every unread byte, and writes made while it runs leave together
/// in one `writev` when it returns. Loop-confined, like the connection.
final class NetTransport: HTTPTransport {
    let connection: TCPConnection

    init(connection: TCPConnection) {
        self.connection = connection
    }

    /// Routes the connection's events to `delegate`. The connection holds `delegate` until it closes
    /// (it drops its handlers then), which keeps the HTTP connection alive exactly as long as the socket.
    func start(delegate: some HTTPTransportDelegate) {
        connection.onRead { bytes in delegate.transportReceived(bytes) }
        connection.onWritable { delegate.transportDrained() }
        connection.onClose { _ in delegate.transportClosed() }
    }

    func consumeBufferedInput(_ body: (UnsafeRawBufferPointer) -> Int) {
        connection.consumeBufferedInput(body)
    }

    func write(_ bytes: UnsafeRawBufferPointer) {
        do {
            try connection.write(copying: bytes)
        } catch {
            // Closing or closed: the close handler tells the HTTP connection.
        }
    }

    var pendingOutputCount: Int { connection.bufferedOutputCount }

    func pauseReading() { connection.pauseReading() }

    func resumeReading() { connection.resumeReading() }

    func close(flushing: Bool) {
        if flushing { connection.close() } else { connection.abort() }
    }
}
