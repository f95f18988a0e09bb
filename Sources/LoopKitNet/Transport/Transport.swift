#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// How a connection's bytes move: through a socket (``SocketTransport``), into an in-memory partner
/// (``MemoryTransport``), or through a TLS session over either (``TLSTransport``). A ``TCPConnection``
/// owns one transport; everything above it (the read buffer, the write batch, watermarks, the close
/// state machine) is the same whatever moves the bytes.
///
/// A transport with a descriptor is watched by the loop for readiness; one without (in memory) tells its
/// connection itself, through ``TCPConnection/transportIsReadable()`` and
/// ``TCPConnection/transportHasRoom()``, in the loop's next iteration.
///
/// Loop-confined, like its connection: every call on the loop's thread.
protocol Transport: AnyObject {
    /// The descriptor the loop watches for readiness; -1 for a transport that announces readiness itself
    /// (in memory), and once closed.
    var descriptor: Int32 { get }

    /// Reads up to `count` bytes into `buffer`.
    func read(into buffer: UnsafeMutableRawPointer, count: Int) -> Socket.Transfer

    /// Sends the `count` buffers of `vectors` in order, as much as the transport takes now.
    func write(_ vectors: UnsafePointer<iovec>, count: Int) -> Socket.Transfer

    /// The connection wants to read again (or no longer does): an in-memory transport tells its partner
    /// that room was made, and announces bytes it holds.
    func readInterestChanged(wanted: Bool)

    /// Ends the sending side; the peer reads end of file, this side keeps reading.
    func shutdownOutput()

    /// Closes the transport, once. `reset` drops what is unsent and resets the connection;
    /// `notifyingPeer` lets a TLS session send `close_notify` first (a clean, graceful end).
    func close(reset: Bool, notifyingPeer: Bool)
}
