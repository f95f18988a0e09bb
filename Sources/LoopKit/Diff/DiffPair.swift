/// An element's position in the old data and its position in the new data: the form of every move and
/// every update a diff reports.
///
/// `Position` is `Int` for flat diffs and ``ItemPath`` for items of sectioned diffs. In a move, the
/// element left `from` and lands at `to`; in an update, the element whose content changed was at `from`
/// and is at `to` (they differ when it also moved or shifted), and its new content is the element at `to`.
///
/// A value: safe to use from any thread.
public struct DiffPair<Position: Hashable & Sendable>: Hashable, Sendable {
    /// The position in the old data.
    public var from: Position
    /// The position in the new data.
    public var to: Position

    /// Creates the pair of the element at `from` in the old data and at `to` in the new data.
    @inlinable
    public init(from: Position, to: Position) {
        self.from = from
        self.to = to
    }
}
