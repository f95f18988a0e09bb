/// The byte stream under an ``HTTPConnection``: what the connection needs from a TCP connection.
///
/// Loop-confined: every member is called on the connection's loop thread.
protocol HTTPTransport: AnyObject {
    /// Lends the bytes received and not yet consumed, outside a read callback (to parse the next
    /// pipelined request after an async response); `body` returns how many it consumed.
    func consumeBufferedInput(_ body: (UnsafeRawBufferPointer) -> Int)
    /// Queues bytes for sending (copied). Inside a read callback they go out when it returns.
    func write(_ bytes: UnsafeRawBufferPointer)
    /// Bytes queued and not yet sent.
    var pendingOutputCount: Int { get }
    /// Stops reading from the socket (the kernel's buffers then push back on the client).
    func pauseReading()
    /// Reads again.
    func resumeReading()
    /// Closes: after sending what is queued, or at once.
    func close(flushing: Bool)
}

/// What a transport tells its connection. Loop-confined.
protocol HTTPTransportDelegate: AnyObject {
    /// Bytes arrived: `bytes` are all the unconsumed ones, borrowed for the call; returns how many were consumed.
    func transportReceived(_ bytes: UnsafeRawBufferPointer) -> Int
    /// The queued output fell to the low-water mark.
    func transportDrained()
    /// The connection is closed (by either side, or an error); called exactly once; the fd is gone.
    func transportClosed()
}
