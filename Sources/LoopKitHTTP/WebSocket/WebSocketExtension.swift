/// A WebSocket extension (RFC 6455 §9) as the handshake sees it: negotiated from the client's
/// `Sec-WebSocket-Extensions` offers, answered in the `101`, and made into the per-connection
/// ``WebSocketExtensionCodec`` that transforms the messages. permessage-deflate
/// (``PerMessageDeflate``) is the one conformer.
///
/// A value (the accepted parameters): safe from any thread.
protocol WebSocketExtension: Sendable {
    /// What transforms one connection's messages.
    associatedtype Codec: WebSocketExtensionCodec

    /// The first of the client's offers the server can honour, or nil (the extension is not used).
    /// - Parameters:
    ///   - offers: The request's `Sec-WebSocket-Extensions` values.
    ///   - configuration: The route's configuration (for the server's own parameters).
    static func negotiate(_ offers: [String], configuration: WebSocketConfiguration) -> Self?

    /// The extension's `Sec-WebSocket-Extensions` value in the `101`.
    var responseValue: String { get }

    /// The codec for one connection, made at the take-over, on the connection's loop thread.
    func makeCodec() -> Codec
}
