#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

// `sendfile(2)`: a range of a file goes from the page cache to a plain socket, with no copy through user
// space and no read on the work pool. The output queued before it (a response head) goes first; when the
// socket is full the send waits for the loop's write readiness, as queued output does.

extension Connection {
    /// Whether ``sendFile(_:from:count:)`` can be used: the transport is a plain socket (TLS and in-memory
    /// transports cannot take a file's bytes from the kernel). A constant.
    package var sendsFilesDirectly: Bool { isPlainSocket }

    /// Sends `count` bytes of the file open at `file` from `offset` with `sendfile(2)`, after the output
    /// queued before them; suspends while the socket is full. Returns the bytes sent: fewer than `count`
    /// only when the file ended first (it shrank).
    ///
    /// The bytes go from the page cache on the loop's thread: a file not in the cache blocks the loop
    /// while the kernel reads it, as it does nginx's worker without `aio`.
    ///
    /// - Throws: ``NetError/connectionClosed(_:)`` when the connection ends (or has ended) meanwhile; a
    ///   failure of `sendfile(2)` ends the connection.
    ///
    /// Call on the loop's thread, on a connection whose ``sendsFilesDirectly`` is true.
    package func sendFile(_ file: Int32, from offset: Int64, count: Int64) async throws(NetError) -> Int64 {
        checkThread()
        precondition(isPlainSocket, "Connection.sendFile called on a connection that is not a plain socket")
        var sent: Int64 = 0
        while sent < count {
            try checkWritable()
            guard output.isEmpty, !batchIsOpen else {
                try await waitForSocket()
                continue
            }
            var position = off_t(offset + sent)
            let moved = Glibc.sendfile(fd, file, &position, Int(Swift.min(count - sent, 1 << 30)))
            if moved > 0 {
                sent += Int64(moved)
                sentByteCount &+= UInt64(moved)
                extras?.timeouts?.wrote(at: loop.clockNanoseconds)
            } else if moved == 0 {
                return sent  // the file ended before `count`: it shrank
            } else {
                switch errno {
                case EAGAIN: try await waitForSocket()
                case EINTR: continue
                case let code:
                    end(.failed(code))
                    throw .connectionClosed(.failed(code))
                }
            }
        }
        return sent
    }

    /// Suspends until the queued output has drained and the socket can take more (or the connection ends).
    private func waitForSocket() async throws(NetError) {
        precondition(socketWaiter == nil, "Connection.sendFile called while another file send waits")
        let result = await withUnsafeContinuation { (continuation: UnsafeContinuation<Result<Void, NetError>, Never>) in
            if case .closed(let reason) = machine.state {
                continuation.resume(returning: .failure(.connectionClosed(reason)))
                return
            }
            socketWaiter = continuation
            watchForWritable()
        }
        try result.get()
    }
}
