import LoopKit
import LoopKitNet

/// What a TLS server or client presents and accepts: certificates, trust, versions, ciphers, ALPN.
///
/// A plain value; safe from any thread. Turn it into a ``TLSContext`` (which loads and checks it) to use it.
///
/// ```swift
/// let server = try TLSContext(.server(certificateChain: .file("cert.pem"), privateKey: .file("key.pem")))
/// let client = try TLSContext(.client(trustRoots: .pem(caBytes)))
/// ```
public struct TLSConfiguration: Sendable, Hashable {
    /// PEM-encoded material, from a file or from bytes in memory.
    public enum Source: Sendable, Hashable {
        /// A PEM file's path.
        case file(String)
        /// PEM text.
        case pem(Bytes)
    }

    /// Which certificates a peer's certificate must chain to.
    public enum TrustRoots: Sendable, Hashable {
        /// The system's trust store (Debian's `ca-certificates`).
        case system
        /// These CA certificates (PEM, one or more) instead.
        case certificates(Source)
    }

    /// How a peer's certificate is checked.
    public enum Verification: Sendable, Hashable {
        /// A client checks the server's chain and that it names the host asked for (the default for
        /// clients). A server with this setting requires a client certificate that chains to its trust
        /// roots (mutual TLS).
        case full
        /// A server asks for a client certificate and checks it if one is sent, but lets clients without
        /// one in.
        case optional
        /// No check at all: any certificate, any name. For tests against throwaway certificates only;
        /// the name says what it gives up. (A server that asks no client certificate uses ``none``.)
        case insecureNoVerification
        /// A server asks no client certificate (the default for servers).
        case none
    }

    /// The oldest protocol version accepted.
    public enum Version: Sendable, Hashable {
        case tls12
        case tls13
    }

    /// Server or client.
    public enum Role: Sendable, Hashable {
        case server
        case client
    }

    /// Which side of the handshake this is.
    public var role: Role
    /// The certificate chain presented, leaf first (required for a server; a client's, for mutual TLS).
    public var certificateChain: Source?
    /// The private key of the leaf certificate.
    public var privateKey: Source?
    /// What a peer's certificate must chain to.
    public var trustRoots: TrustRoots = .system
    /// How a peer's certificate is checked.
    public var verification: Verification
    /// The oldest version accepted (default TLS 1.2; TLS 1.3 is always offered).
    public var minimumVersion: Version = .tls12
    /// TLS 1.2 cipher suites in OpenSSL's list syntax; nil keeps OpenSSL's defaults (forward-secret AEAD
    /// suites first). TLS 1.3 suites are OpenSSL's, all safe.
    public var cipherList: String?
    /// ALPN protocol names (RFC 7301), most preferred first (`["h2", "http/1.1"]`); empty (default): no
    /// ALPN. Each name is 1 to 255 bytes.
    ///
    /// A client offers them in this order. A server speaks them: it chooses its first that the client
    /// offers; a client that offers none of them is refused during the handshake with a fatal
    /// `no_application_protocol` alert (RFC 7301 §3.2, what nginx does), which the client reports as
    /// ``NetError/tls(_:)`` and the listener counts as a failed handshake. A client that offers no ALPN,
    /// or a server with none, goes on without: ``Connection/applicationProtocol`` is then nil.
    /// ``TLSContext/withApplicationProtocols(_:)`` gives one connection, or one server, other protocols.
    public var applicationProtocols: [String] = []
    /// How long a handshake may take before the connection ends (default 10 s).
    public var handshakeTimeout: Duration = .seconds(10)

    /// A server presenting `certificateChain` and `privateKey`; no client certificate asked for.
    /// - Parameters:
    ///   - certificateChain: The chain, leaf first (PEM).
    ///   - privateKey: The leaf's key (PEM).
    public static func server(certificateChain: Source, privateKey: Source) -> TLSConfiguration {
        TLSConfiguration(role: .server, certificateChain: certificateChain, privateKey: privateKey, verification: .none)
    }

    /// A client that checks the server's certificate against `trustRoots` and the host name it connects to.
    /// - Parameter trustRoots: The system's store (default) or given CA certificates.
    public static func client(trustRoots: TrustRoots = .system) -> TLSConfiguration {
        TLSConfiguration(role: .client, trustRoots: trustRoots, verification: .full)
    }

    /// A configuration; see ``server(certificateChain:privateKey:)`` and ``client(trustRoots:)`` for the
    /// usual ones.
    public init(role: Role, certificateChain: Source? = nil, privateKey: Source? = nil,
                trustRoots: TrustRoots = .system, verification: Verification) {
        self.role = role
        self.certificateChain = certificateChain
        self.privateKey = privateKey
        self.trustRoots = trustRoots
        self.verification = verification
    }
}
