import HTTPTypes

/// What a route answers when an ``HTTPUpgrader`` asks it (``HTTPUpgrader/shouldUpgrade(_:)``): accept,
/// with extra fields for the `101`, or refuse with a response. The public form for WebSocket routes is
/// ``WebSocketUpgradeDecision``. A value: safe from any thread.
public enum HTTPUpgradeDecision: Sendable {
    /// Accept: `101 Switching Protocols`, with these fields added to it.
    case accept(HTTPFields)
    /// Refuse with this response; the connection stays HTTP.
    case refuse(HTTPServerResponse)
}
