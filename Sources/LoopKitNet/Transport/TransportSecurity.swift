import LoopKit

/// A security layer a connection's bytes pass through above its transport: what a listener secures its
/// accepted connections with, or a connect its socket. LoopKitNet moves bytes and drives the layer's
/// handshake and read-ahead through ``Transport``; `LoopKitTLS`'s `TLSContext` is the layer (OpenSSL), so
/// a program or a C host that speaks no TLS links no OpenSSL.
///
/// Safe from any thread; ``secure(_:serverName:on:)`` on the loop's thread of the connection.
package protocol TransportSecurity: AnyObject, Sendable {
    /// Whether the layer serves (a listener's connections) or connects (a client's).
    var isServer: Bool { get }

    /// `inner` with the layer over it; a client's names `serverName` (SNI, and the name the peer's
    /// certificate must carry). Loop thread only.
    /// - Throws: ``NetError/tls(_:)`` when the session cannot be made (`inner` is closed then).
    func secure(_ inner: Transport, serverName: String?, on loop: EventLoop) throws(NetError) -> Transport
}

/// A ``TransportSecurity`` in a value that settings can hold: equal when it is the same layer.
package struct SecurityLayer: Sendable, Hashable {
    package let layer: any TransportSecurity

    package init(_ layer: any TransportSecurity) { self.layer = layer }

    package static func == (lhs: SecurityLayer, rhs: SecurityLayer) -> Bool { lhs.layer === rhs.layer }

    package func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(layer)) }
}

extension Transport {
    /// This transport, with `security` over it when given. Loop thread only.
    /// - Throws: ``NetError/tls(_:)`` when the layer cannot make its session.
    func secured(by security: (any TransportSecurity)?, serverName: String?, on loop: EventLoop) throws(NetError) -> Transport {
        guard let security else { return self }
        return try security.secure(self, serverName: serverName, on: loop)
    }
}
