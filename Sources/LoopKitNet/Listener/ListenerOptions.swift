/// Settings for a ``TCPListener``.
///
/// A plain value; safe from any thread.
public struct ListenerOptions: Sendable, Hashable {
    /// The kernel's queue of connections not yet accepted (`listen`'s backlog). Default 511.
    public var backlog: Int32 = 511
    /// The settings each accepted connection gets.
    public var connection = ConnectionOptions()

    /// The defaults.
    public init() {}
}
