import HTTPTypes

/// What a WebSocket route's `shouldUpgrade` check answers: accept the upgrade (with extra response
/// fields, such as the chosen `Sec-WebSocket-Protocol`), or refuse it with a response.
///
/// ```swift
/// router.webSocket("/chat", shouldUpgrade: { request in
///     request.head.headerFields[.authorization] == nil ? .refuse(status: .unauthorized) : .accept
/// }) { request, socket in … }
/// ```
/// A value type: safe from any thread.
public struct WebSocketUpgradeDecision: Sendable {
    let kind: HTTPUpgradeDecision

    /// Accept: `101 Switching Protocols`, with permessage-deflate when the client offered it and the
    /// route allows it.
    public static let accept = WebSocketUpgradeDecision(kind: .accept([:]))

    /// Accept, adding these fields to the `101` response.
    /// - Parameter headerFields: Fields such as `Sec-WebSocket-Protocol` or `Set-Cookie`.
    public static func accept(headerFields: HTTPFields) -> WebSocketUpgradeDecision {
        WebSocketUpgradeDecision(kind: .accept(headerFields))
    }

    /// Refuse with this response; the connection stays an HTTP connection.
    /// - Parameter response: The response (403, 401, …).
    public static func refuse(_ response: HTTPServerResponse) -> WebSocketUpgradeDecision {
        WebSocketUpgradeDecision(kind: .refuse(response))
    }

    /// Refuse with this status and an empty body.
    /// - Parameter status: The status.
    public static func refuse(status: HTTPResponse.Status) -> WebSocketUpgradeDecision {
        WebSocketUpgradeDecision(kind: .refuse(HTTPServerResponse(status: status)))
    }
}
