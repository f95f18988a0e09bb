#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

import LoopKit

/// TLS over another transport: what the connection writes is encrypted into the transport beneath, what
/// it reads is decrypted from it. Over a socket OpenSSL reads and writes the descriptor itself (its
/// socket BIO, no extra copy); over any other transport (in memory) through a BIO whose reads and writes
/// are that transport's, so the same handshake, records and alerts run in a test as on the wire.
///
/// What it asks of its connection: a handshake first (``handshake()``, bounded by
/// ``TLSConfiguration/handshakeTimeout``), and a look after each read for records OpenSSL decrypted
/// ahead, which the transport beneath will not announce again (``hasUnannouncedInput``). Readiness is
/// the transport beneath's.
///
/// Loop-confined, like its connection.
final class TLSTransport: Transport {
    /// The OpenSSL session (the C boundary lives in `Internal/OpenSSL.swift`).
    let session: TLSSession
    /// The transport the records travel on.
    let inner: Transport

    /// Wraps `inner`; the connection drives the handshake through ``handshake()``.
    /// - Throws: ``NetError/tls(_:)`` when OpenSSL cannot make the session.
    init(over inner: Transport, context: SSLContextHandle, serverName: String?, applicationProtocols: ALPNProtocols?,
         scratch: TLSWriteScratch) throws(NetError) {
        self.inner = inner
        let carrier: TLSSession.Carrier = inner is SocketTransport ? .descriptor(inner.descriptor) : .transport(inner)
        session = try TLSSession(context: context, carrier: carrier, serverName: serverName,
                                 applicationProtocols: applicationProtocols, scratch: scratch)
    }

    /// The transport of a new connection: `inner`, with TLS over it when `context` is given (a client's
    /// names `serverName`). Loop thread only.
    /// - Throws: ``NetError/tls(_:)`` when OpenSSL cannot make the session.
    static func wrapping(_ inner: Transport, in context: TLSContext?, serverName: String?,
                         on loop: EventLoop) throws(NetError) -> Transport {
        guard let context else { return inner }
        return try TLSTransport(over: inner, context: context.handle, serverName: serverName,
                                applicationProtocols: context.applicationProtocolsOverride, scratch: .of(loop))
    }

    var readiness: TransportReadiness { inner.readiness }

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

    // MARK: Read-ahead

    var readsAhead: Bool { true }

    /// Decrypted bytes OpenSSL holds that the transport beneath will not announce again.
    var hasUnannouncedInput: Bool { session.hasPendingBytes }

    // MARK: Handshake

    var needsHandshake: Bool { true }

    /// ``TLSConfiguration/handshakeTimeout`` of the session's context.
    var handshakeTimeout: Duration { session.context.handshakeTimeout }

    /// Takes the handshake a step further. The corresponding OpenSSL call is `SSL_do_handshake`.
    func handshake() -> HandshakeStep { session.handshake() }

    /// A failed TLS handshake ends the connection with ``CloseReason/tls(_:)``, and its waiter is told
    /// ``NetError/tls(_:)``.
    func handshakeFailure(_ description: String) -> HandshakeFailure {
        HandshakeFailure(error: .tls(description), reason: .tls(description))
    }
}
