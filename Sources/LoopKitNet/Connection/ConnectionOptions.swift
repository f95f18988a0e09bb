/// Per-connection settings: watermarks, timeouts and socket options.
///
/// **Who checks the timeouts**: on the connections a listener accepts, the deadline sweep of the
/// listener's registry on each loop (one timer per loop, ticking every quarter of the shortest timeout,
/// between 5 ms and 1 s, while connections are open; no timer per connection), so a timeout ends a
/// connection up to one sweep interval after it passed, never before. A registry shared with an HTTP
/// server (or with other listeners) ticks at the finest interval any of them asks for, so a listener's
/// timeouts keep their own bound there, and it goes back to a coarser one once the listener and its
/// connections are gone. A connection opened with `connect` (or an end of an in-memory pair, in tests) has
/// no registry and keeps one timer of its own, set for its next deadline.
///
/// A plain value; safe from any thread.
public struct ConnectionOptions: Sendable, Hashable {
    /// Reading from the socket stops while this many bytes wait unread, until the handler (or the
    /// ``Connection/inbound`` consumer) takes some. Bounds what a peer can make the connection buffer.
    /// Default 64 KiB.
    public var readHighWaterMark: Int = 64 * 1024
    /// Above this many buffered output bytes, ``Connection/isWritable`` is false, async writes suspend
    /// and (unless ``readsWhileOutputIsFull``) a server's connection is not read.
    /// Default 64 KiB.
    public var writeHighWaterMark: Int = 64 * 1024
    /// Once a connection that went above ``writeHighWaterMark`` has drained to this many bytes, it is
    /// writable again (suspended writers resume, the writable handler runs). Default 16 KiB.
    public var writeLowWaterMark: Int = 16 * 1024
    /// The connection ends with ``CloseReason/timedOut(_:)`` `.read` when it waits this long for bytes
    /// while reading (not while reading is paused by backpressure). On an accepted connection the
    /// listener's deadline sweep notices it, up to one sweep interval late (see above). Nil (default): no limit.
    public var readTimeout: Duration?
    /// The connection ends with `.write` when buffered output makes no progress for this long; on an
    /// accepted connection up to one sweep interval late. Nil (default): no limit.
    public var writeTimeout: Duration?
    /// The connection ends with `.idle` after this long without reading or writing a byte; on an
    /// accepted connection up to one sweep interval late. Nil (default): no limit.
    public var idleTimeout: Duration?
    /// `TCP_NODELAY`: send small writes at once. Default true (servers answer requests).
    public var noDelay: Bool = true
    /// `SO_KEEPALIVE`: let the kernel probe an idle peer. Default false.
    public var keepAlive: Bool = false
    /// When the peer ends its side, keep this side open for writing until it closes (half-close). When
    /// false (default), the connection closes gracefully once the input is read and the output flushed.
    public var allowsHalfClosure: Bool = false
    /// Whether to keep reading while the unsent output is above ``writeHighWaterMark``.
    ///
    /// When false, a connection whose output is above the high-water mark is not read until the output
    /// drains to ``writeLowWaterMark``: a handler that writes what it reads (an echo, a proxy) then holds
    /// no more than the watermarks against a peer that never reads. When true, reading goes on, and the
    /// handler bounds its output itself (``Connection/isWritable``, or the suspending `send`).
    ///
    /// Nil (the default) decides by role: false for connections a listener accepts (a server's, whose
    /// peer is not trusted), true for connections this side opens with `connect` (a client's, which must
    /// go on reading while it writes, or a client and a server that both stop reading while their
    /// output is full would wait for each other for ever).
    public var readsWhileOutputIsFull: Bool?

    /// The defaults.
    public init() {}
}
