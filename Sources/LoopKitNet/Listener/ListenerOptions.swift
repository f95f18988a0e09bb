/// Settings for a ``TCPListener``.
///
/// A plain value; safe from any thread.
public struct ListenerOptions: Sendable, Hashable {
    /// The kernel's queue of connections not yet accepted (`listen`'s backlog). Default 511.
    public var backlog: Int32 = 511
    /// The settings each accepted connection gets.
    public var connection = ConnectionOptions()
    /// The security layer over every accepted connection (`LoopKitTLS`'s `tls`, a server `TLSContext`);
    /// nil (default): plain TCP. A secured connection is handed to the listener's handler once its
    /// handshake is done; one whose handshake fails (or times out) ends without reaching it.
    package var security: SecurityLayer?
    /// The kernel hands a TCP connection over only once its first bytes have arrived
    /// (`TCP_DEFER_ACCEPT`), rather than when its handshake completes. Default false.
    ///
    /// For protocols whose client speaks first (HTTP, TLS): a new connection then costs the loop one
    /// wake-up instead of two (its handshake, then its first bytes), and its first read always finds
    /// data. A client that connects and sends nothing waits in the kernel, not in the server, and is
    /// handed over anyway after about ``deferralTimeout`` (when the kernel resends its handshake
    /// reply). Leave it off for protocols where the server speaks first. Ignored for Unix-domain sockets.
    public var defersAcceptUntilData = false

    /// How long a connection whose client sends nothing may wait in the kernel when
    /// ``defersAcceptUntilData`` is on (default ``deferredAcceptTimeout``), in whole seconds: the kernel hands
    /// it over at its next resend of the handshake reply after that.
    public var deferralTimeout: Duration = ListenerOptions.deferredAcceptTimeout

    /// The default ``deferralTimeout``: one second, the shortest the kernel takes.
    public static let deferredAcceptTimeout: Duration = .seconds(1)

    /// The defaults.
    public init() {}
}
