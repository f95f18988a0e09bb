/// Settings for a ``TCPListener``.
///
/// A plain value; safe from any thread.
public struct ListenerOptions: Sendable, Hashable {
    /// The kernel's queue of connections not yet accepted (`listen`'s backlog). Default 511.
    public var backlog: Int32 = 511
    /// The settings each accepted connection gets.
    public var connection = ConnectionOptions()
    /// TLS for every accepted connection (a server ``TLSContext``); nil (default): plain TCP. A TLS
    /// connection is handed to the listener's handler once its handshake is done; one whose handshake
    /// fails (or times out) ends without reaching it.
    public var tls: TLSContext?

    /// The defaults.
    public init() {}
}
