import LoopKit

/// What a ``Connection``'s bytes and events go to. A connection has one handler at a time
/// (``Connection/setHandler(_:)``), and hands itself over with ``Connection/replaceHandler(_:)``:
/// a protocol upgrade (HTTP to WebSocket) replaces the HTTP handler with the new protocol's, which is
/// given the bytes already read, and the old handler is released.
///
/// Every method is called on the connection's loop's thread. Only ``connection(_:received:)`` is
/// required; the others do nothing unless implemented.
public protocol ConnectionHandler: AnyObject {
    /// Bytes arrived: the handler is lent every unread byte, contiguous, and returns how many it consumed,
    /// from 0 to `bytes.count`. The rest stays buffered and is lent again, after the bytes that arrive
    /// next. The pointer is valid only during the call. Writes made here are sent together, with one
    /// `writev`, when it returns. Consuming nothing is backpressure (see ``Connection/onRead(_:)``).
    ///
    /// Called on the loop's thread.
    func connection(_ connection: Connection, received bytes: UnsafeRawBufferPointer) -> Int

    /// The peer ended its side and every byte before the end was read, while the connection stays open
    /// for writing (``ConnectionOptions/allowsHalfClosure``). Called on the loop's thread.
    func connectionInputEnded(_ connection: Connection)

    /// Output that went above ``ConnectionOptions/writeHighWaterMark`` drained to
    /// ``ConnectionOptions/writeLowWaterMark``: the time to write more. Called on the loop's thread.
    func connectionBecameWritable(_ connection: Connection)

    /// The connection ended, with `reason`; called once, before the ``Connection/onClose(_:)``
    /// observers. The connection lets go of the handler afterwards. Called on the loop's thread.
    func connection(_ connection: Connection, closedWith reason: CloseReason)

    /// The server drains (a graceful shutdown): close the connection when idle, else once the work under
    /// way allows (an HTTP response finished, a WebSocket close handshake). The drain aborts what is still
    /// open at its deadline. By default the connection closes gracefully at once (its output is sent
    /// first). Called on the loop's thread.
    func connectionShouldDrain(_ connection: Connection)

    /// The registry's deadline sweep looks at the connection (a server's protocol that keeps deadlines:
    /// a head, a body, an idle wait, write progress): end it if one has passed. `now` is the loop's clock
    /// as the sweep read it, once for every connection it looks at: keep deadlines as instants of the
    /// loop's clock (`loop.clock.now.advanced(by: timeout)`) and compare them with `now`. The sweep
    /// runs at the finest interval anything on the registry asks for, so a deadline is noticed at most one
    /// interval after it passed, never before. The connection's own timeouts (``ConnectionOptions/readTimeout``,
    /// ``ConnectionOptions/writeTimeout``, ``ConnectionOptions/idleTimeout``) were checked just before,
    /// by the connection itself: a handler need not, and cannot skip them; a connection they ended is not
    /// passed here. Only the connections a registry keeps (a listener's) are swept. By default nothing is
    /// checked. Called on the loop's thread.
    func checkDeadlines(_ connection: Connection, now: EventLoopClock.Instant)
}

extension ConnectionHandler {
    public func connectionShouldDrain(_ connection: Connection) { connection.close() }
    public func checkDeadlines(_ connection: Connection, now: EventLoopClock.Instant) {}
    public func connectionInputEnded(_ connection: Connection) {}
    public func connectionBecameWritable(_ connection: Connection) {}
    public func connection(_ connection: Connection, closedWith reason: CloseReason) {}
}

/// The handler behind the closure API (``Connection/onRead(_:)``, ``Connection/onWritable(_:)``,
/// ``Connection/onInputEnded(_:)``): each closure set on its own. Loop-confined, like its connection.
final class CallbackHandler: ConnectionHandler {
    var read: ((UnsafeRawBufferPointer) -> Int)?
    var writable: (() -> Void)?
    var inputEnded: (() -> Void)?

    func connection(_ connection: Connection, received bytes: UnsafeRawBufferPointer) -> Int {
        read?(bytes) ?? 0
    }

    func connectionInputEnded(_ connection: Connection) { inputEnded?() }

    func connectionBecameWritable(_ connection: Connection) { writable?() }
}
