import Synchronization

/// A loaded, checked ``TLSConfiguration`` (an OpenSSL `SSL_CTX`): what a listener's TLS connections or a
/// TLS client connection are made from.
///
/// ```swift
/// var options = ListenerOptions()
/// options.tls = try TLSContext(.server(certificateChain: .file("cert.pem"), privateKey: .file("key.pem")))
/// let listener = try TCPListener.bind(host: "0.0.0.0", port: 8443, on: group, options: options) { … }
/// // later, with renewed files: new handshakes use them, open connections keep theirs
/// try options.tls!.reload(.server(certificateChain: .file("cert.pem"), privateKey: .file("key.pem")))
/// ```
///
/// Safe from any thread.
public final class TLSContext: Sendable {
    private let current: Mutex<SSLContextHandle>

    /// Loads and checks `configuration`: certificate and key read and matched, trust roots loaded.
    ///
    /// - Parameter configuration: What to present and accept.
    /// - Throws: ``NetError/tls(_:)`` with OpenSSL's reason (an unreadable file, a key that does not
    ///   match its certificate, an unknown cipher list, a server without a certificate).
    ///
    /// Safe from any thread.
    public init(_ configuration: TLSConfiguration) throws(NetError) {
        current = Mutex(try SSLContextHandle(configuration))
    }

    /// Replaces the configuration (a renewed certificate, say) without a restart: handshakes that start
    /// after this use the new one; connections already made keep theirs. The role cannot change.
    ///
    /// - Parameter configuration: The new configuration.
    /// - Throws: ``NetError/tls(_:)`` as ``init(_:)``; the old configuration stays in use then.
    ///
    /// Safe from any thread.
    public func reload(_ configuration: TLSConfiguration) throws(NetError) {
        let replacement = try SSLContextHandle(configuration)
        let role = current.withLock { $0.role }
        guard replacement.role == role else { throw .tls("a reload cannot change a \(role) context's role") }
        current.withLock { $0 = replacement }
    }

    /// Whether this context serves (listeners) or connects (clients). Safe from any thread.
    public var role: TLSConfiguration.Role { current.withLock { $0.role } }

    /// The context new handshakes use.
    var handle: SSLContextHandle { current.withLock { $0 } }
}

/// What a TLS connection agreed on with its peer, once its handshake is done.
public struct TLSConnectionInfo: Sendable, Hashable {
    /// The protocol version, as OpenSSL names it (`TLSv1.3`).
    public var version: String
    /// The ALPN protocol chosen, if any.
    public var applicationProtocol: String?
    /// The peer's certificate, DER-encoded (a server sees one only when it asks for client certificates).
    public var peerCertificate: [UInt8]?
    /// The peer certificate's subject (`/CN=client`), if it sent one.
    public var peerSubject: String?
}

extension TLSContext: Hashable {
    /// The same context (identity: two loads of one configuration are two contexts).
    public static func == (lhs: TLSContext, rhs: TLSContext) -> Bool { lhs === rhs }

    /// Hashes the identity.
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}
