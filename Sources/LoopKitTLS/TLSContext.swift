import LoopKit
import LoopKitNet
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
    /// The context handshakes use now; shared with the contexts made by ``withApplicationProtocols(_:)``.
    private let current: Shared
    /// Protocols in place of the configuration's (``withApplicationProtocols(_:)``); nil: the configuration's.
    let applicationProtocolsOverride: ALPNProtocols?

    /// The current `SSL_CTX`, behind a lock: what a reload replaces.
    private final class Shared: Sendable {
        let handle: Mutex<SSLContextHandle>
        init(_ handle: SSLContextHandle) { self.handle = Mutex(handle) }
    }

    /// Loads and checks `configuration`: certificate and key read and matched, trust roots loaded.
    ///
    /// - Parameter configuration: What to present and accept.
    /// - Throws: ``NetError/tls(_:)`` with OpenSSL's reason (an unreadable file, a key that does not
    ///   match its certificate, an unknown cipher list, a server without a certificate).
    ///
    /// Safe from any thread.
    public init(_ configuration: TLSConfiguration) throws(NetError) {
        current = Shared(try SSLContextHandle(configuration))
        applicationProtocolsOverride = nil
    }

    private init(sharing current: Shared, applicationProtocols: ALPNProtocols) {
        self.current = current
        applicationProtocolsOverride = applicationProtocols
    }

    /// This context with `protocols` as its ALPN protocols in place of its configuration's: the same
    /// certificates, trust and settings, one ``reload(_:)`` for both (a reload keeps `protocols`).
    ///
    /// A client connection made with it offers `protocols`, in this order; a listener's connections choose
    /// among them (the server's first that the client offers). See ``TLSConfiguration/applicationProtocols``
    /// for what happens when there is none in common.
    ///
    /// ```swift
    /// let client = try TLSContext(.client())
    /// let connection = try await Connection.connect(host: "example.org", port: 443, on: loop,
    ///                                                  tls: try client.withApplicationProtocols(["http/1.1"]))
    /// connection.applicationProtocol  // "http/1.1"
    /// ```
    ///
    /// - Parameter protocols: Protocol names, most preferred first (`["h2", "http/1.1"]`); empty: no ALPN.
    /// - Returns: A context of its own (not equal to this one) that shares this one's `SSL_CTX`.
    /// - Throws: ``NetError/tls(_:)`` for a name that is empty or longer than 255 bytes.
    ///
    /// Safe from any thread. The corresponding OpenSSL call is `SSL_set_alpn_protos` (clients), or the
    /// server's ALPN callback reads the protocols from the connection's `SSL`.
    public func withApplicationProtocols(_ protocols: [String]) throws(NetError) -> TLSContext {
        TLSContext(sharing: current, applicationProtocols: try ALPNProtocols(protocols))
    }

    /// The ALPN protocols this context offers (client) or chooses from (server), most preferred first:
    /// those given to ``withApplicationProtocols(_:)``, else its configuration's. Safe from any thread.
    public var applicationProtocols: [String] {
        applicationProtocolsOverride?.names ?? handle.applicationProtocols.names
    }

    /// Replaces the configuration (a renewed certificate, say) without a restart: handshakes that start
    /// after this use the new one; connections already made keep theirs. The role cannot change. The
    /// contexts made from this one by ``withApplicationProtocols(_:)`` (and this one's origin, if it was
    /// made so) take the new configuration too, each keeping its protocols.
    ///
    /// - Parameter configuration: The new configuration.
    /// - Throws: ``NetError/tls(_:)`` as ``init(_:)``; the old configuration stays in use then.
    ///
    /// Safe from any thread.
    public func reload(_ configuration: TLSConfiguration) throws(NetError) {
        let replacement = try SSLContextHandle(configuration)
        let role = self.role
        guard replacement.role == role else { throw .tls("a reload cannot change a \(role) context's role") }
        current.handle.withLock { $0 = replacement }
    }

    /// Whether this context serves (listeners) or connects (clients). Safe from any thread.
    public var role: TLSConfiguration.Role { handle.role }

    /// The context new handshakes use.
    var handle: SSLContextHandle { current.handle.withLock { $0 } }
}

/// What a TLS connection agreed on with its peer, once its handshake is done.
public struct TLSConnectionInfo: Sendable, Hashable {
    /// The protocol version, as OpenSSL names it (`TLSv1.3`).
    public var version: String
    /// The ALPN protocol chosen, if any (see ``Connection/applicationProtocol``).
    public var applicationProtocol: String?
    /// The peer's certificate, DER-encoded (a server sees one only when it asks for client certificates).
    public var peerCertificate: Bytes?
    /// The peer certificate's subject (`/CN=client`), if it sent one.
    public var peerSubject: String?
}

extension TLSContext: Hashable {
    /// The same context (identity: two loads of one configuration are two contexts).
    public static func == (lhs: TLSContext, rhs: TLSContext) -> Bool { lhs === rhs }

    /// Hashes the identity.
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}
