#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A non-blocking stream socket (TCP or Unix-domain): reads are `read`, writes one `writev`. The loop
/// watches its descriptor. Loop-confined, like its connection.
final class SocketTransport: Transport {
    private(set) var descriptor: Int32

    var readiness: TransportReadiness { .watchedDescriptor }

    /// Takes ownership of `fd`: the transport closes it.
    init(fd: Int32) { descriptor = fd }

    deinit {
        // Reached without close() for a connection whose set-up failed before it was handed out.
        if descriptor >= 0 { Socket.close(descriptor) }
    }

    @inline(__always)
    func read(into buffer: UnsafeMutableRawPointer, count: Int) -> Socket.Transfer {
        Socket.read(descriptor, into: buffer, count: count)
    }

    @inline(__always)
    func write(_ vectors: UnsafePointer<iovec>, count: Int) -> Socket.Transfer {
        guard descriptor >= 0 else { return .wouldBlock }
        return Socket.write(descriptor, vectors, count: count)
    }

    func readInterestChanged(wanted: Bool) {}  // the connection's read watch follows it

    /// The corresponding system call is `shutdown(fd, SHUT_WR)`.
    func shutdownOutput() {
        if descriptor >= 0 { Socket.shutdownWrite(descriptor) }
    }

    /// The corresponding system call is `close`, after `SO_LINGER` 0 for a reset.
    func close(reset: Bool, notifyingPeer: Bool) {
        guard descriptor >= 0 else { return }
        if reset { Socket.resetOnClose(descriptor) }
        Socket.close(descriptor)
        descriptor = -1
    }
}
