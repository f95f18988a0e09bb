extension Diff {
    /// The changes as the standard library's `CollectionDifference`.
    ///
    /// Deletions and insertions map to removals and insertions; each move is a removal and an insertion
    /// associated with each other (as `inferringMoves()` would produce); an update in place is an
    /// unassociated removal of the old content and insertion of the new. For the data the diff was
    /// computed from, `old.applying(diff.collectionDifference) == new`.
    ///
    /// Safe from any thread: a pure function of the diff.
    public var collectionDifference: CollectionDifference<Element> {
        var updateAt: [Int: Int] = [:]  // new offset -> index in `updates`
        updateAt.reserveCapacity(updates.count)
        for (k, update) in updates.enumerated() { updateAt[update.to] = k }

        typealias Change = CollectionDifference<Element>.Change
        var changes: [Change] = []
        changes.reserveCapacity(deletions.count + insertions.count + 2 * (moves.count + updates.count))
        for (k, i) in deletions.enumerated() {
            changes.append(.remove(offset: i, element: deletedElements[k], associatedWith: nil))
        }
        for (k, j) in insertions.enumerated() {
            changes.append(.insert(offset: j, element: insertedElements[k], associatedWith: nil))
        }
        for (k, move) in moves.enumerated() {
            let newValue = updateAt.removeValue(forKey: move.to).map { updatedElements[$0] } ?? movedElements[k]
            changes.append(.remove(offset: move.from, element: movedElements[k], associatedWith: move.to))
            changes.append(.insert(offset: move.to, element: newValue, associatedWith: move.from))
        }
        for k in updateAt.values.sorted() {  // updates in place
            let update = updates[k]
            changes.append(.remove(offset: update.from, element: replacedElements[k], associatedWith: nil))
            changes.append(.insert(offset: update.to, element: updatedElements[k], associatedWith: nil))
        }
        guard let difference = CollectionDifference(changes) else {
            preconditionFailure("LoopKit.Diff produced offsets that CollectionDifference rejects")
        }
        return difference
    }

    /// Creates a diff from the standard library's `CollectionDifference`.
    ///
    /// A removal and an insertion associated with each other become a move when both elements have the
    /// same ``Diffable/diffID`` (and also an update when their content differs); otherwise they stay a
    /// deletion and an insertion. Unassociated changes become deletions and insertions; the standard
    /// library's diff has no updates, so a changed element without `inferringMoves()` is a deletion
    /// plus an insertion. ``duplicates`` is empty: the difference carries no identities.
    ///
    /// Safe from any thread: a pure function of its inputs.
    ///
    /// - Parameters:
    ///   - difference: The changes, for example `new.difference(from: old).inferringMoves()`.
    ///   - oldCount: The number of elements in the data the difference applies to.
    /// - Throws: ``DiffError/outOfRange(_:_:)`` when an offset doesn't fit `oldCount`, or
    ///   ``DiffError/countMismatch(expected:actual:)`` when there are more removals than elements.
    public init(_ difference: CollectionDifference<Element>, oldCount: Int) throws(DiffError) {
        let newCount = oldCount - difference.removals.count + difference.insertions.count
        guard oldCount >= 0, difference.removals.count <= oldCount else {
            throw .countMismatch(expected: difference.removals.count, actual: oldCount)
        }
        var insertedAt: [Int: Element] = [:]
        for case let .insert(offset, element, _) in difference.insertions {
            guard offset >= 0, offset < newCount else { throw .outOfRange(.insertion, .index(offset)) }
            insertedAt[offset] = element
        }

        var deletions: [Int] = [], deletedElements: [Element] = []
        var moves: [DiffPair<Int>] = [], movedElements: [Element] = []
        var updates: [DiffPair<Int>] = [], replacedElements: [Element] = [], updatedElements: [Element] = []
        var movedTo = Set<Int>()
        for case let .remove(offset, element, associated) in difference.removals {
            guard offset >= 0, offset < oldCount else { throw .outOfRange(.deletion, .index(offset)) }
            if let to = associated, let newValue = insertedAt[to], newValue.diffID == element.diffID {
                moves.append(DiffPair(from: offset, to: to))
                movedElements.append(element)
                movedTo.insert(to)
                if newValue != element {
                    updates.append(DiffPair(from: offset, to: to))
                    replacedElements.append(element)
                    updatedElements.append(newValue)
                }
            } else {
                deletions.append(offset)
                deletedElements.append(element)
            }
        }
        var insertions: [Int] = [], insertedElements: [Element] = []
        for case let .insert(offset, element, _) in difference.insertions where !movedTo.contains(offset) {
            insertions.append(offset)
            insertedElements.append(element)
        }

        func byDestination<T>(_ pairs: [(Int, T)]) -> [T] { pairs.sorted { $0.0 < $1.0 }.map(\.1) }
        let moveOrder = byDestination(moves.indices.map { (moves[$0].to, $0) })
        let updateOrder = byDestination(updates.indices.map { (updates[$0].to, $0) })
        self.init(
            oldCount: oldCount, newCount: newCount,
            deletions: deletions, insertions: insertions,
            moves: moveOrder.map { moves[$0] }, updates: updateOrder.map { updates[$0] },
            duplicates: [], isReload: false,
            deletedElements: deletedElements, insertedElements: insertedElements,
            movedElements: moveOrder.map { movedElements[$0] },
            replacedElements: updateOrder.map { replacedElements[$0] },
            updatedElements: updateOrder.map { updatedElements[$0] })
    }
}
