import LoopKit

extension Connection {
    /// Two connections joined in memory on `loop` (the first in a client's role, the second in a
    /// server's), each over a ``MemoryTransport``: what one writes moves into the other's inbound bytes
    /// (up to its read high-water mark; the rest waits in the writer's output), and the reader reads
    /// them in the loop's next iteration, so a test drives them iteration by iteration. The same
    /// watermarks, backpressure and close reasons as sockets; no socket options; of the timeouts, only
    /// the idle timeout. `LoopKitNetTesting`'s `InMemoryConnectionPair` is the public face.
    ///
    /// With `security`, the ends speak TLS over the memory transports (the server end with
    /// `security.server`, the client end with `security.client`, naming `security.serverName`): the same
    /// OpenSSL handshake, records and alerts as on a socket. The handshakes start at once and run as the
    /// loop iterates; `handshaken` is told once, on the loop, when both are done (nil) or one failed (its
    /// error; both ends have ended). Without `security.client`, the client end stays plain: what it writes
    /// reaches the TLS server raw (bad input, fuzzing), and `handshaken` follows the server's handshake alone.
    ///
    /// Call on the loop's thread.
    package static func makeInMemoryPair(
        on loop: EventLoop, options: ConnectionOptions, security: InMemorySecurity? = nil,
        handshaken: ((NetError?) -> Void)? = nil
    ) throws(NetError) -> (Connection, Connection) {
        precondition(loop.isCurrent, "makeInMemoryPair(on:options:) called off the loop's thread")
        guard loop.isAcceptingWork else { throw .loopShutDown }
        if let security {
            guard security.server.isServer, !(security.client?.isServer ?? false) else {
                throw .tls("an in-memory TLS pair needs a server context and a client context")
            }
        }
        var pairOptions = options
        pairOptions.readTimeout = nil
        pairOptions.writeTimeout = nil
        let clientEnd = MemoryTransport()
        let serverEnd = MemoryTransport()
        clientEnd.partner = serverEnd
        serverEnd.partner = clientEnd
        let a = Connection(loop: loop, transport: try clientEnd.secured(by: security?.client, serverName: security?.serverName, on: loop),
                              profile: ConnectionProfile(options: pairOptions, isTCP: false, accepted: false), connected: true)
        let b = Connection(loop: loop, transport: try serverEnd.secured(by: security?.server, serverName: nil, on: loop),
                              profile: ConnectionProfile(options: pairOptions, isTCP: false, accepted: true), connected: true)
        clientEnd.owner = a
        serverEnd.owner = b
        a.start()
        b.start()
        guard security != nil else { return (a, b) }
        var pending = security?.client == nil ? 1 : 2
        var told = false
        let tell: (NetError?) -> Void = { error in
            guard !told else { return }
            if let error {
                told = true
                a.end(.tls("\(error)"))
                b.end(.tls("\(error)"))
                handshaken?(error)
                return
            }
            pending -= 1
            if pending == 0 {
                told = true
                handshaken?(nil)
            }
        }
        b.startHandshake(completion: tell)
        if a.needsHandshake { a.startHandshake(completion: tell) }
        return (a, b)
    }
}

/// The security (TLS) of an in-memory pair: the server end's layer, the client end's, and the name the
/// client asks for (SNI, and the name the server's certificate must carry when the client verifies it).
package struct InMemorySecurity: Sendable {
    package let server: any TransportSecurity
    /// The client end's layer; nil for a plain client end.
    package let client: (any TransportSecurity)?
    package let serverName: String

    package init(server: any TransportSecurity, client: (any TransportSecurity)?, serverName: String) {
        self.server = server
        self.client = client
        self.serverName = serverName
    }
}
