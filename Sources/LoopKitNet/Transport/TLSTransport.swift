#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// TLS over another transport: what the connection writes is encrypted into the transport beneath, what
/// it reads is decrypted from it. Over a socket OpenSSL reads and writes the descriptor itself (its
/// socket BIO, no extra copy); over any other transport (in memory) through a BIO whose reads and writes
/// are that transport's, so the same handshake, records and alerts run in a test as on the wire.
///
/// Loop-confined, like its connection.
final class TLSTransport: Transport {
    /// The OpenSSL session (the C boundary lives in `Internal/OpenSSL.swift`).
    let session: TLSSession
    /// The transport the records travel on.
    let inner: Transport

    /// Wraps `inner`; the handshake is driven by ``handshake()``.
    /// - Throws: ``NetError/tls(_:)`` when OpenSSL cannot make the session.
    init(over inner: Transport, context: SSLContextHandle, serverName: String?, applicationProtocols: ALPNProtocols?,
         scratch: TLSWriteScratch) throws(NetError) {
        self.inner = inner
        let carrier: TLSSession.Carrier = inner is SocketTransport ? .descriptor(inner.descriptor) : .transport(inner)
        session = try TLSSession(context: context, carrier: carrier, serverName: serverName,
                                 applicationProtocols: applicationProtocols, scratch: scratch)
    }

    var descriptor: Int32 { inner.descriptor }

    @inline(__always)
    func read(into buffer: UnsafeMutableRawPointer, count: Int) -> Socket.Transfer {
        session.read(into: buffer, count: count)
    }

    @inline(__always)
    func write(_ vectors: UnsafePointer<iovec>, count: Int) -> Socket.Transfer {
        session.write(vectors, count: count)
    }

    func readInterestChanged(wanted: Bool) { inner.readInterestChanged(wanted: wanted) }

    /// Ends the sending side of the transport beneath (no `close_notify`: the session may still read).
    func shutdownOutput() { inner.shutdownOutput() }

    func close(reset: Bool, notifyingPeer: Bool) {
        if notifyingPeer, !reset { session.sendCloseNotify() }
        inner.close(reset: reset, notifyingPeer: false)
    }

    /// Takes the handshake a step further.
    func handshake() -> TLSSession.HandshakeStep { session.handshake() }

    /// Decrypted bytes OpenSSL holds that the transport beneath will not announce again.
    var hasPendingBytes: Bool { session.hasPendingBytes }
}
