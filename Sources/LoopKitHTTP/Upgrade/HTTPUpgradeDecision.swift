import HTTPTypes

/// What a route answers when an ``HTTPUpgrader`` asks it (``HTTPUpgrader/shouldUpgrade(_:)``): accept,
/// with extra fields for the `101`, or refuse with a response. The public form for WebSocket routes is
/// ``WebSocketUpgradeDecision``. A value: safe from any thread.
enum HTTPUpgradeDecision: Sendable {
    case accept(HTTPFields)
    case refuse(HTTPServerResponse)
}
