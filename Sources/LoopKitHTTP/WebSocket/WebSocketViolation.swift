/// A rule of RFC 6455 (or RFC 7692) the peer broke, or a limit it passed: the socket fails with a close
/// frame carrying ``code`` and ``reason`` (§7.1.7 "Fail the WebSocket Connection").
///
/// A value type: safe from any thread.
package struct WebSocketViolation: Error, Hashable, Sendable, CustomStringConvertible {
    /// The code the close frame carries: 1002, 1007 or 1009.
    package var code: WebSocketCloseCode
    /// The close frame's reason (short: a close payload holds at most 123 bytes of it).
    package var reason: String

    /// A broken framing rule: 1002.
    static func protocolError(_ reason: String) -> WebSocketViolation { .init(code: .protocolError, reason: reason) }
    /// Text that is not UTF-8: 1007.
    static func invalidUTF8(_ reason: String) -> WebSocketViolation { .init(code: .invalidFramePayloadData, reason: reason) }
    /// A frame or message past the limits: 1009.
    static func tooBig(_ reason: String) -> WebSocketViolation { .init(code: .messageTooBig, reason: reason) }

    package var description: String { "\(code): \(reason)" }
}
