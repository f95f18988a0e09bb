/// An item that moved: its position in the old data and its position in the new data.
///
/// `Position` is `Int` for flat diffs and ``ItemPath`` for items of sectioned diffs.
///
/// A value: safe to use from any thread.
public struct DiffMove<Position: Hashable & Sendable>: Hashable, Sendable {
    /// The position in the old data.
    ///
    /// Safe from any thread.
    public var from: Position
    /// The position in the new data.
    ///
    /// Safe from any thread.
    public var to: Position

    /// Creates a move from `from` (old data) to `to` (new data).
    ///
    /// Safe from any thread.
    @inlinable
    public init(from: Position, to: Position) {
        self.from = from
        self.to = to
    }
}

/// An item whose content changed while its identity stayed: its old and its new position.
///
/// `from` and `to` differ when the item also moved or shifted; the new content is the element at `to`.
///
/// A value: safe to use from any thread.
public struct DiffUpdate<Position: Hashable & Sendable>: Hashable, Sendable {
    /// The position in the old data.
    ///
    /// Safe from any thread.
    public var from: Position
    /// The position in the new data.
    ///
    /// Safe from any thread.
    public var to: Position

    /// Creates an update of the item at `from` (old data) that is at `to` in the new data.
    ///
    /// Safe from any thread.
    @inlinable
    public init(from: Position, to: Position) {
        self.from = from
        self.to = to
    }
}
