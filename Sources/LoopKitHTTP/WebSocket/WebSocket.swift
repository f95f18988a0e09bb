import LoopKit
import LoopKitNet

/// A WebSocket connection (RFC 6455) a route accepted: text and binary messages both ways, with
/// backpressure, pings answered, and the close handshake.
///
/// Handed to the handler of a `router.webSocket(…)` route once the `101 Switching Protocols` is
/// written; from then on the connection is the socket's (it still counts as one of the server's open
/// connections, and graceful shutdown closes it with 1001).
///
/// ```swift
/// router.webSocket("/ws/echo") { request, socket in            // async: a task on the loop
///     for try await message in socket.messages { try await socket.send(message) }
/// }                                                              // returning closes with 1000
/// router.webSocket("/ws/shout") { request, socket in           // callbacks: on the loop thread
///     socket.onMessage { message in
///         guard case .text(let text) = message else { return }
///         do { try socket.write(.text(text.uppercased())) } catch { return }  // closed: onClose says why
///     }
/// }
/// ```
///
/// Two ways to read: ``messages`` (an `AsyncSequence` whose demand drives reading: while
/// ``WebSocketConfiguration/inboundBufferLimit`` bytes of messages wait unread the socket is not read)
/// or ``onMessage(_:)`` (each message as it arrives). Two ways to send: ``send(_:)`` suspends while the
/// connection's unsent output is above its write high-water mark; ``write(_:)`` never waits
/// (check ``isWritable``). Control frames are handled for you: pings are answered, a close frame is
/// echoed, keep-alive pings go out every ``WebSocketConfiguration/pingInterval`` when set.
///
/// **Ending**: however the socket ends (a close handshake from either side, a rule the peer broke, a
/// ping timeout, the connection lost, server shutdown), the `messages` reader is resumed and every
/// ``onClose(_:)`` handler runs, exactly once.
///
/// **Thread rule**: the socket lives on its connection's loop (``loop``): call every method and
/// property on that loop's thread (a precondition checks it), except ``loop``, safe from any thread.
/// Handlers of `router.webSocket` routes run there. The handle itself is `Sendable` (its state is
/// loop-bound), so a task on that loop may hold it.
public final class WebSocket: Sendable {
    /// The loop the socket lives on. Safe from any thread.
    public let loop: EventLoop
    /// The loop-confined engine.
    let core: LoopBound<WebSocketCore>

    init(tcp: Connection, configuration: WebSocketConfiguration, extension negotiated: sending WebSocketNegotiatedExtension?) {
        loop = tcp.loop
        core = LoopBound(WebSocketCore(tcp: tcp, configuration: configuration, extension: negotiated), on: tcp.loop)
    }

    /// Whether the socket can still send: no close frame sent or received, connection open. Call on the
    /// loop's thread.
    public var isOpen: Bool {
        let core = core.value
        return core.closing.canSend && core.ending == nil
    }

    /// Whether a ``write(_:)`` now stays within the connection's write high-water mark. Call on the
    /// loop's thread.
    public var isWritable: Bool { core.value.tcp.isWritable }

    /// The close code, once a close frame was sent or received: the peer's (1005 when its close frame
    /// had none), or this side's when it closed first; 1006 when the connection ended without one. Nil
    /// while open. Call on the loop's thread.
    public var closeCode: WebSocketCloseCode? { core.value.closing.code }

    /// Whether permessage-deflate (RFC 7692) was negotiated: messages are compressed both ways. Call on
    /// the loop's thread.
    public var isCompressed: Bool { core.value.parser.allowsRSV1 }

    /// The close reason that goes with ``closeCode`` (empty when there was none). Call on the loop's thread.
    public var closeReason: String { core.value.closing.reason }

    // MARK: Callbacks

    /// Sets the handler that gets each message as it arrives (instead of reading ``messages``); it gets
    /// the messages already waiting first. The handler stays until the socket ends.
    ///
    /// - Parameter handler: Called on the loop's thread with each whole message.
    ///
    /// Call on the loop's thread.
    public func onMessage(_ handler: @escaping (WebSocketMessage) -> Void) {
        core.value.setMessageHandler(handler)
    }

    /// Adds a handler called once when the socket has ended, with nil after a clean close handshake or
    /// the ``WebSocketError`` that ended it. On a socket that has ended already it runs in the loop's next
    /// iteration, as a `Connection`'s `onClose` does.
    ///
    /// - Parameter handler: Called on the loop's thread.
    ///
    /// Call on the loop's thread.
    public func onClose(_ handler: @escaping (WebSocketError?) -> Void) {
        core.value.addCloseHandler(handler)
    }

    /// Sets the handler called when output that went above the write high-water mark has drained to the
    /// low-water mark: the time to ``write(_:)`` more.
    ///
    /// - Parameter handler: Called on the loop's thread.
    ///
    /// Call on the loop's thread.
    public func onWritable(_ handler: @escaping () -> Void) {
        core.value.tcp.onWritable(handler)
    }

    /// Sends a message now, as one frame, without waiting: never refused for being above the write
    /// high-water mark (check ``isWritable`` or use ``send(_:)``).
    ///
    /// - Parameter message: The message.
    /// - Throws: ``WebSocketError/closed(_:reason:)`` (or what ended the socket) once it is closing or closed.
    ///
    /// Call on the loop's thread.
    public func write(_ message: WebSocketMessage) throws(WebSocketError) {
        try core.value.write(message)
    }

    /// Starts the close handshake: sends a close frame with `code` and `reason` and waits (at most
    /// ``WebSocketConfiguration/closeTimeout``) for the peer's, then the connection closes. Messages that
    /// arrive meanwhile are dropped. Does nothing on a socket that is closing or closed.
    ///
    /// - Parameters:
    ///   - code: The code (1000 by default); one a close frame may carry
    ///     (``WebSocketCloseCode/isValidOnTheWire``), else a precondition failure.
    ///   - reason: A short reason, cut to the 123 bytes a close frame holds.
    ///
    /// Call on the loop's thread.
    public func close(code: WebSocketCloseCode = .normalClosure, reason: String = "") {
        core.value.close(code: code, reason: reason)
    }
}
