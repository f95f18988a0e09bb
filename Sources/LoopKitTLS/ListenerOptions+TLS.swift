import LoopKitNet

extension ListenerOptions {
    /// TLS for every accepted connection (a server ``TLSContext``); nil (default): plain TCP. A TLS
    /// connection is handed to the listener's handler once its handshake is done; one whose handshake
    /// fails (or times out) ends without reaching it (``TCPListener/failedHandshakeCount``).
    public var tls: TLSContext? {
        get { security?.layer as? TLSContext }
        set { security = newValue.map(SecurityLayer.init) }
    }
}
