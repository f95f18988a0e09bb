extension Diff {
    /// Applies the changes to `old` and returns the new data.
    ///
    /// Performs the changes the way a table view performs a batch: removes the deletions and move
    /// sources (old offsets), places insertions and move destinations (new offsets), fills the remaining
    /// positions with the remaining old elements in order, then replaces updated elements with their new
    /// content. For the data the diff was computed from, the result equals the new data.
    /// O(n).
    ///
    /// Safe from any thread: a pure function of its inputs.
    ///
    /// - Parameter old: The data to change; it must have ``oldCount`` elements.
    /// - Returns: The data after the changes.
    /// - Throws: ``DiffError`` when `old` has the wrong count or the changes are inconsistent (possible
    ///   only for a diff made with ``init(_:oldCount:)`` from an inconsistent source).
    public func apply(to old: [Element]) throws(DiffError) -> [Element] {
        guard old.count == oldCount else {
            throw .countMismatch(expected: oldCount, actual: old.count)
        }
        var leaving = [Bool](repeating: false, count: oldCount)
        for i in deletions {
            guard i >= 0, i < oldCount else { throw .outOfRange(.deletion, .index(i)) }
            guard !leaving[i] else { throw .positionUsedTwice(.deletion, .index(i)) }
            leaving[i] = true
        }
        for move in moves {
            guard move.from >= 0, move.from < oldCount else { throw .outOfRange(.move, .index(move.from)) }
            guard !leaving[move.from] else { throw .positionUsedTwice(.move, .index(move.from)) }
            leaving[move.from] = true
        }

        var result = [Element?](repeating: nil, count: newCount)
        var newIndexOfOld = [Int](repeating: -1, count: oldCount)
        for (k, j) in insertions.enumerated() {
            guard j >= 0, j < newCount else { throw .outOfRange(.insertion, .index(j)) }
            guard result[j] == nil else { throw .positionUsedTwice(.insertion, .index(j)) }
            result[j] = insertedElements[k]
        }
        for move in moves {
            guard move.to >= 0, move.to < newCount else { throw .outOfRange(.move, .index(move.to)) }
            guard result[move.to] == nil else { throw .positionUsedTwice(.move, .index(move.to)) }
            result[move.to] = old[move.from]
            newIndexOfOld[move.from] = move.to
        }

        let remaining = oldCount - deletions.count - moves.count
        let open = newCount - insertions.count - moves.count
        guard remaining == open else {
            throw .inconsistentCount(section: nil, expected: open, actual: remaining)
        }
        var j = 0
        for i in 0..<oldCount where !leaving[i] {
            while result[j] != nil { j += 1 }
            result[j] = old[i]
            newIndexOfOld[i] = j
            j += 1
        }

        for (k, update) in updates.enumerated() {
            guard update.from >= 0, update.from < oldCount, update.to >= 0, update.to < newCount,
                newIndexOfOld[update.from] == update.to
            else {
                throw .misplacedUpdate(.update, from: .index(update.from), to: .index(update.to))
            }
            result[update.to] = updatedElements[k]
        }
        // Every position was filled exactly once: insertions and moves at distinct positions, the
        // remaining elements in the `open` positions left.
        return result.compactMap { $0 }
    }
}
