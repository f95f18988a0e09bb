#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

import LoopKit
import LoopKitNet

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
        // A transport the loop watches by descriptor is a socket's (or a pipe's): OpenSSL reads and writes it.
        let carrier: TLSSession.Carrier = inner.readiness == .watchedDescriptor ? .descriptor(inner.descriptor) : .transport(inner)
        session = try TLSSession(context: context, carrier: carrier, serverName: serverName,
                                 applicationProtocols: applicationProtocols, scratch: scratch)
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

extension TLSContext: TransportSecurity {
    /// A server context secures a listener's connections; a client's, a connect.
    package var isServer: Bool { role == .server }

    /// `inner` with a TLS session over it, from the context's current configuration. Loop thread only.
    /// - Throws: ``NetError/tls(_:)`` when OpenSSL cannot make the session.
    package func secure(_ inner: Transport, serverName: String?, on loop: EventLoop) throws(NetError) -> Transport {
        try TLSTransport(over: inner, context: handle, serverName: serverName,
                         applicationProtocols: applicationProtocolsOverride, scratch: .of(loop))
    }
}
