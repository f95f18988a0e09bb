import LoopKitNet

/// A whole WebSocket message: text or binary, however many frames it came in.
///
/// ```swift
/// for try await message in socket.messages {
///     switch message {
///     case .text(let text): print(text)
///     case .binary(let bytes): print(bytes.count, "bytes")
///     }
/// }
/// ```
/// A value type: safe from any thread.
public enum WebSocketMessage: Hashable, Sendable {
    /// A text message (its bytes were checked to be UTF-8).
    case text(String)
    /// A binary message (build one from an array literal, a string or an array: `.binary(Bytes(array))`).
    case binary(Bytes)
}
