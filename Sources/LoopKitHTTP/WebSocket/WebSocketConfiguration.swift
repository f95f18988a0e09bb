/// A WebSocket route's limits, timeouts and compression; every value has a safe default.
///
/// ```swift
/// var configuration = WebSocketConfiguration()
/// configuration.maxMessageSize = 16 << 20
/// configuration.pingInterval = .seconds(30)
/// router.webSocket("/feed", configuration: configuration) { request, socket in … }
/// ```
/// A value type: safe from any thread.
public struct WebSocketConfiguration: Sendable {
    /// The largest frame payload accepted (default 1 MiB); past it the socket closes with 1009.
    public var maxFrameSize: Int = 1 << 20
    /// The largest message accepted, after decompression (default 1 MiB); past it the socket closes
    /// with 1009.
    public var maxMessageSize: Int = 1 << 20
    /// Bytes of received messages that may wait for the reader of ``WebSocket/messages`` (default 64 KiB):
    /// past them the socket is not read until the reader takes a message (backpressure).
    public var inboundBufferLimit: Int = 64 * 1024
    /// Whether permessage-deflate (RFC 7692) is accepted when the client offers it (default true).
    public var allowsCompression: Bool = true
    /// Whether the server resets its compressor after each message even when the client did not ask
    /// (`server_no_context_takeover`; default false: less memory kept between messages when true).
    public var serverNoContextTakeover: Bool = false
    /// How often a keep-alive ping is sent; nil (default) for none. The server's deadline sweep sends it,
    /// up to one sweep interval after it falls due (the sweep ticks every quarter of the shortest
    /// deadline of the server and its WebSocket routes, between 5 ms and 1 s).
    public var pingInterval: Duration?
    /// How long a keep-alive ping may wait for its pong before the connection is closed (default 10 s);
    /// noticed by the server's deadline sweep, up to one sweep interval late.
    public var pingTimeout: Duration = .seconds(10)
    /// How long the server waits for the peer's close frame after sending its own (default 5 s); then
    /// it drops the connection (noticed by the server's deadline sweep, up to one sweep interval late).
    public var closeTimeout: Duration = .seconds(5)

    /// A configuration with the defaults.
    public init() {}

    /// The shortest of the deadlines a socket keeps (close timeout; ping interval and ping timeout when
    /// pinging), which the server's deadline sweep must tick fast enough for.
    var shortestDeadline: Duration {
        guard let pingInterval else { return closeTimeout }
        return min(closeTimeout, pingInterval, pingTimeout)
    }
}
