extension SectionedDiff {
    /// Applies the changes to `old` and returns the new sections.
    ///
    /// Performs section and item changes the way a table view performs a batch (see
    /// ``BatchStage/apply(to:)``), then replaces updated models and items with their new content, taken
    /// from ``new``. For ``old`` the result equals ``new``. O(n).
    ///
    /// Safe from any thread: a pure function of its inputs.
    ///
    /// - Parameter old: The sections to change; they must have the shape of ``old`` (section and item
    ///   counts).
    /// - Returns: The sections after the changes.
    /// - Throws: ``DiffError`` when `old` doesn't have the shape the changes expect.
    public func apply(to old: [Section]) throws(DiffError) -> [Section] {
        guard old.count == self.old.count else {
            throw .countMismatch(expected: self.old.count, actual: old.count)
        }
        var changes = _SectionedChanges()
        changes.sectionDeletions = sections.deletions
        changes.sectionInsertions = sections.insertions
        changes.sectionMoves = sections.moves
        changes.sectionUpdates = sections.updates
        changes.itemDeletions = itemDeletions
        changes.itemInsertions = itemInsertions
        changes.itemMoves = itemMoves
        changes.itemUpdates = itemUpdates
        return try changes.apply(to: old, taking: new)
    }
}

/// Section and item changes in batch-update form, and the one routine that performs them.
///
/// Shared by ``SectionedDiff/apply(to:)`` (which uses updates: content replaced at the new position,
/// moved or not) and ``BatchStage`` (which uses reloads: old positions of items that neither move nor
/// leave and that the other changes don't shift, as `reloadItems(at:)` takes them). Content for
/// insertions, reloads and updates comes from the `after` sections, as a table view takes it from its
/// data source.
struct _SectionedChanges {
    var sectionDeletions: [Int] = []
    var sectionInsertions: [Int] = []
    var sectionMoves: [DiffPair<Int>] = []
    /// Old indices of sections replaced whole (model and items) by the `after` section.
    var sectionReloads: [Int] = []
    /// Sections whose model is replaced by the `after` model.
    var sectionUpdates: [DiffPair<Int>] = []
    var itemDeletions: [ItemPath] = []
    var itemInsertions: [ItemPath] = []
    var itemMoves: [DiffPair<ItemPath>] = []
    /// Old paths of items replaced by the `after` item; they must not move, leave or be shifted.
    var itemReloads: [ItemPath] = []
    /// Items replaced by the `after` item at `to`, which must be where the other changes put `from`.
    var itemUpdates: [DiffPair<ItemPath>] = []
    /// Whether an item change may touch a moved section: yes for a whole diff, no for a batch stage
    /// (table and collection views mis-animate or crash on it, so stages keep them apart).
    var allowsItemChangesInMovedSections = true

    private static var deleted: UInt8 { 1 }
    private static var moved: UInt8 { 2 }
    private static var reloaded: UInt8 { 4 }
    private static var updated: UInt8 { 8 }

    /// Applies the changes to `before`, taking new content from `after`, and checks the batch rules.
    func apply<Model, Item>(
        to before: [DiffSection<Model, Item>], taking after: [DiffSection<Model, Item>]
    ) throws(DiffError) -> [DiffSection<Model, Item>] {
        let oldCount = before.count
        let newCount = after.count

        // Sections: which old sections leave, where each new section comes from.
        var oldFlags = [UInt8](repeating: 0, count: oldCount)
        for s in sectionDeletions {
            guard s >= 0, s < oldCount else { throw .outOfRange(.sectionDeletion, .section(s)) }
            guard oldFlags[s] == 0 else { throw .positionUsedTwice(.sectionDeletion, .section(s)) }
            oldFlags[s] = Self.deleted
        }
        for move in sectionMoves {
            let s = move.from
            guard s >= 0, s < oldCount else { throw .outOfRange(.sectionMove, .section(s)) }
            guard oldFlags[s] == 0 else { throw .positionUsedTwice(.sectionMove, .section(s)) }
            oldFlags[s] = Self.moved
        }
        let unfilled = -2
        let inserted = -1
        var sourceOfNew = [Int](repeating: unfilled, count: newCount)
        for t in sectionInsertions {
            guard t >= 0, t < newCount else { throw .outOfRange(.sectionInsertion, .section(t)) }
            guard sourceOfNew[t] == unfilled else { throw .positionUsedTwice(.sectionInsertion, .section(t)) }
            sourceOfNew[t] = inserted
        }
        var newOfOld = [Int](repeating: -1, count: oldCount)
        for move in sectionMoves {
            let t = move.to
            guard t >= 0, t < newCount else { throw .outOfRange(.sectionMove, .section(t)) }
            guard sourceOfNew[t] == unfilled else { throw .positionUsedTwice(.sectionMove, .section(t)) }
            sourceOfNew[t] = move.from
            newOfOld[move.from] = t
        }
        let remaining = oldCount - sectionDeletions.count - sectionMoves.count
        let open = newCount - sectionInsertions.count - sectionMoves.count
        guard remaining == open else {
            throw .inconsistentCount(section: nil, expected: open, actual: remaining)
        }
        do {
            var t = 0
            for s in 0..<oldCount where oldFlags[s] == 0 {
                while sourceOfNew[t] != unfilled { t += 1 }
                sourceOfNew[t] = s
                newOfOld[s] = t
                t += 1
            }
        }
        var reloadedNew = [Bool](repeating: false, count: newCount)
        for s in sectionReloads {
            guard s >= 0, s < oldCount else { throw .outOfRange(.sectionReload, .section(s)) }
            guard oldFlags[s] & (Self.deleted | Self.moved) == 0 else {
                throw .reloadOfChangedPosition(.sectionReload, .section(s))
            }
            guard oldFlags[s] & Self.reloaded == 0 else { throw .positionUsedTwice(.sectionReload, .section(s)) }
            // A table view reloads by deleting and inserting at one index: it must not shift.
            guard newOfOld[s] == s else { throw .reloadOfChangedPosition(.sectionReload, .section(s)) }
            oldFlags[s] |= Self.reloaded
            reloadedNew[newOfOld[s]] = true
        }
        var modelUpdatedNew = [Bool](repeating: false, count: newCount)
        for update in sectionUpdates {
            guard update.from >= 0, update.from < oldCount, update.to >= 0, update.to < newCount,
                newOfOld[update.from] == update.to, !modelUpdatedNew[update.to]
            else {
                throw .misplacedUpdate(.sectionUpdate, from: .section(update.from), to: .section(update.to))
            }
            modelUpdatedNew[update.to] = true
        }

        // Items leaving or reloaded, flagged in old space; only sections with changes get flags.
        var itemFlags = [[UInt8]](repeating: [], count: oldCount)
        func flagOld(_ path: ItemPath, _ operation: DiffError.Operation, _ flag: UInt8) throws(DiffError) {
            let s = path.section
            guard s >= 0, s < oldCount, path.item >= 0, path.item < before[s].items.count else {
                throw .outOfRange(operation, .item(path))
            }
            guard oldFlags[s] & (Self.deleted | Self.reloaded) == 0,
                allowsItemChangesInMovedSections || oldFlags[s] & Self.moved == 0
            else {
                throw .itemInChangedSection(operation, .item(path))
            }
            if itemFlags[s].isEmpty { itemFlags[s] = [UInt8](repeating: 0, count: before[s].items.count) }
            let current = itemFlags[s][path.item]
            if flag == Self.reloaded, current & (Self.deleted | Self.moved) != 0 {
                throw .reloadOfChangedPosition(operation, .item(path))
            }
            if flag != Self.updated, current & (Self.deleted | Self.moved | Self.reloaded) != 0 {
                throw .positionUsedTwice(operation, .item(path))
            }
            if flag == Self.updated, current & (Self.deleted | Self.updated) != 0 {
                throw .misplacedUpdate(.itemUpdate, from: .item(path), to: .item(path))
            }
            itemFlags[s][path.item] = current | flag
        }
        for path in itemDeletions { try flagOld(path, .itemDeletion, Self.deleted) }
        for move in itemMoves { try flagOld(move.from, .itemMove, Self.moved) }
        for path in itemReloads { try flagOld(path, .itemReload, Self.reloaded) }
        for update in itemUpdates { try flagOld(update.from, .itemUpdate, Self.updated) }

        // Items arriving, placed in new space.
        var slots = [[Item?]](repeating: [], count: newCount)
        func place(_ path: ItemPath, _ operation: DiffError.Operation, _ item: @autoclosure () -> Item) throws(DiffError) {
            let t = path.section
            guard t >= 0, t < newCount, path.item >= 0, path.item < after[t].items.count else {
                throw .outOfRange(operation, .item(path))
            }
            guard sourceOfNew[t] >= 0, !reloadedNew[t],
                allowsItemChangesInMovedSections || oldFlags[sourceOfNew[t]] & Self.moved == 0
            else { throw .itemInChangedSection(operation, .item(path)) }
            if slots[t].isEmpty { slots[t] = [Item?](repeating: nil, count: after[t].items.count) }
            guard slots[t][path.item] == nil else { throw .positionUsedTwice(operation, .item(path)) }
            slots[t][path.item] = item()
        }
        for path in itemInsertions { try place(path, .itemInsertion, after[path.section].items[path.item]) }
        // Where flagged (reloaded or updated) old items land.
        var landed: [ItemPath: ItemPath] = [:]
        for move in itemMoves {
            try place(move.to, .itemMove, before[move.from.section].items[move.from.item])
            if itemFlags[move.from.section][move.from.item] & Self.updated != 0 { landed[move.from] = move.to }
        }

        // Build the new sections; the remaining old items fill the open slots in order.
        var result: [DiffSection<Model, Item>] = []
        result.reserveCapacity(newCount)
        for t in 0..<newCount {
            let s = sourceOfNew[t]
            if s < 0 || reloadedNew[t] {
                result.append(after[t])
                continue
            }
            let model = modelUpdatedNew[t] ? after[t].model : before[s].model
            let oldItems = before[s].items
            let flags = itemFlags[s]
            let newItemCount = after[t].items.count
            if flags.isEmpty && slots[t].isEmpty {
                guard oldItems.count == newItemCount else {
                    throw .inconsistentCount(section: t, expected: newItemCount, actual: oldItems.count)
                }
                result.append(DiffSection(model, items: oldItems))
                continue
            }
            var items = slots[t].isEmpty ? [Item?](repeating: nil, count: newItemCount) : slots[t]
            let open = items.reduce(0) { $0 + ($1 == nil ? 1 : 0) }
            let leaving = flags.reduce(0) { $0 + ($1 & (Self.deleted | Self.moved) != 0 ? 1 : 0) }
            guard oldItems.count - leaving == open else {
                throw .inconsistentCount(section: t, expected: open, actual: oldItems.count - leaving)
            }
            var b = 0
            for a in oldItems.indices {
                let flag = flags.isEmpty ? 0 : flags[a]
                if flag & (Self.deleted | Self.moved) != 0 { continue }
                while items[b] != nil { b += 1 }
                if flag & Self.reloaded != 0 {
                    // A table view reloads by deleting and inserting at one path: it must not shift.
                    guard s == t, a == b else {
                        throw .reloadOfChangedPosition(.itemReload, .item(ItemPath(section: s, item: a)))
                    }
                    items[b] = after[t].items[b]
                } else {
                    items[b] = oldItems[a]
                }
                if flag & Self.updated != 0 { landed[ItemPath(section: s, item: a)] = ItemPath(section: t, item: b) }
                b += 1
            }
            result.append(DiffSection(model, items: items.compactMap { $0 }))
        }

        for update in itemUpdates {
            guard landed[update.from] == update.to else {
                throw .misplacedUpdate(.itemUpdate, from: .item(update.from), to: .item(update.to))
            }
            result[update.to.section].items[update.to.item] = after[update.to.section].items[update.to.item]
        }
        return result
    }
}
