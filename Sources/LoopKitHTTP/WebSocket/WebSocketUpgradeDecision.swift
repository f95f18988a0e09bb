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
    /// The status of a ``refuse(status:)``: the server's error renderer writes the response.
    var renderedRefusal: HTTPResponse.Status?

    /// Accept: `101 Switching Protocols`, with permessage-deflate when the client offered it and the
    /// route allows it.
    public static let accept = WebSocketUpgradeDecision(kind: .accept([:]))

    /// Accept, adding these fields to the `101` response.
    /// - Parameter headerFields: Fields such as `Sec-WebSocket-Protocol` or `Set-Cookie`.
    public static func accept(headerFields: HTTPFields) -> WebSocketUpgradeDecision {
        WebSocketUpgradeDecision(kind: .accept(headerFields))
    }

    /// Refuse with this response, sent as it is; the connection stays an HTTP connection.
    /// - Parameter response: The response (403, 401, …).
    public static func refuse(_ response: HTTPServerResponse) -> WebSocketUpgradeDecision {
        WebSocketUpgradeDecision(kind: .refuse(response))
    }

    /// Refuse with this status, answered as a thrown `HTTPError(status)` is: by the server's
    /// ``HTTPServer/Configuration/errorRenderer`` (the status's reason phrase as plain text by default,
    /// `{"error":{"status":401,"message":"Unauthorized"}}` with ``HTTPErrorRenderer/json``).
    /// - Parameter status: The status.
    public static func refuse(status: HTTPResponse.Status) -> WebSocketUpgradeDecision {
        WebSocketUpgradeDecision(kind: .refuse(HTTPServerResponse(status: status)), renderedRefusal: status)
    }
}
