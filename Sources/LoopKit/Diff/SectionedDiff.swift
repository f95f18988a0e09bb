/// The changes between two lists of sections: section deletions, insertions, moves and updates, and
/// item deletions, insertions, moves (also across sections) and updates, found by identity in O(n).
///
/// Sections are paired by their model's ``Diffable/diffID`` and items by theirs, across all sections,
/// so an item whose identity turns up in another section is a move, not a deletion and an insertion.
/// Moves within a section are minimal (a longest increasing subsequence stays in place), and a section
/// that moved doesn't make its items move.
///
/// Items travel with their section: the items of a deleted section are not listed as item deletions,
/// and the items of an inserted section are not item insertions. An item that leaves a deleted section
/// for a surviving one is an item insertion, and one that leaves a surviving section for an inserted one
/// is an item deletion, because the batch-update rules of table and collection views forbid item changes
/// that touch a section deleted or inserted by the same batch.
///
/// Item positions follow those rules: deletions and move sources are paths in the old sections,
/// insertions and move destinations paths in the new sections. ``stages()`` splits the changes into
/// ``BatchStage``s a table or collection view can perform, and ``apply(to:)`` applies them to data.
///
/// ```swift
/// let diff = SectionedDiff(from: old, to: new)
/// for stage in diff.stages() { table.commit(stage) }
/// ```
///
/// A `SectionedDiff` keeps the old and new sections (arrays share storage, so this costs no copy). It
/// is `Sendable` when the models, items and their identifiers are.
///
/// A value: safe to use from any thread (`Sendable` when its type arguments are).
public struct SectionedDiff<Model: Diffable, Item: Diffable> {
    /// A section of the data.
    public typealias Section = DiffSection<Model, Item>

    /// The sections before the change.
    public let old: [Section]
    /// The sections after the change.
    public let new: [Section]
    /// The changes to the sections themselves: deletions and moves in old section indices, insertions
    /// and move destinations in new ones, updates for models with the same identity and changed content.
    /// Its ``Diff/duplicates`` lists repeated section identifiers.
    public let sections: Diff<Model>
    /// Paths in the old sections of the items removed, ascending. Only in sections that survive.
    public let itemDeletions: [ItemPath]
    /// Paths in the new sections of the items inserted, ascending. Only in sections that existed before.
    public let itemInsertions: [ItemPath]
    /// Items that moved, within or across surviving sections, ordered by new path.
    public let itemMoves: [DiffPair<ItemPath>]
    /// Items with the same identity and changed content, in surviving sections, ordered by new path.
    /// An item can be both moved and updated.
    public let itemUpdates: [DiffPair<ItemPath>]
    /// Item identifiers that occur more than once in the old or the new sections (counted across all
    /// sections), each listed once, in the order described for ``Diff/duplicates``.
    public let itemDuplicates: [Item.DiffID]
    /// Whether the change count exceeded the reload threshold passed to
    /// ``init(from:to:reloadThreshold:)``: every old section is deleted and every new one inserted, and a
    /// UI should reload all its data instead of animating.
    public let isReload: Bool

    /// Computes the changes from `old` to `new`.
    ///
    /// O(n) time and memory in the number of sections and items (plus O(m log n) for the m items out of
    /// order). Never fails: repeated identifiers are paired in order (the k-th occurrence in the old data
    /// with the k-th in the new data) and listed in ``itemDuplicates`` and `sections.duplicates`.
    ///
    /// Safe from any thread: a pure function of its inputs.
    ///
    /// - Parameters:
    ///   - old: The sections before the change.
    ///   - new: The sections after the change.
    ///   - reloadThreshold: When the number of section and item changes exceeds this, the result is a
    ///     reload (``isReload``). `nil` (the default) never reloads.
    @inlinable
    public init(from old: [Section], to new: [Section], reloadThreshold: Int? = nil) {
        self.old = old
        self.new = new
        let oldModels = old.map(\.model)
        let newModels = new.map(\.model)
        let sectionPairing = _DiffPairing(
            oldCount: old.count, newCount: new.count,
            oldID: { oldModels[$0].diffID }, newID: { newModels[$0].diffID })
        let sectionDiff = Diff(from: oldModels, to: newModels, pairing: sectionPairing, reloadThreshold: nil)
        let newSectionOfOld = sectionPairing.newIndexOfOld
        let oldSectionOfNew = sectionPairing.oldIndexOfNew

        // Flatten: item k of the old data is item (k - oldStart[s]) of section oldSectionOfItem[k].
        let (oldStart, oldSectionOfItem) = Self.flatten(old)
        let (newStart, newSectionOfItem) = Self.flatten(new)
        let pairing = _DiffPairing(
            oldCount: oldSectionOfItem.count, newCount: newSectionOfItem.count,
            oldID: { k in let s = oldSectionOfItem[k]; return old[s].items[k - oldStart[s]].diffID },
            newID: { k in let t = newSectionOfItem[k]; return new[t].items[k - newStart[t]].diffID })

        var deletions: [ItemPath] = []
        for s in old.indices where newSectionOfOld[s] >= 0 {
            for a in old[s].items.indices {
                let j = pairing.newIndexOfOld[oldStart[s] + a]
                if j < 0 || oldSectionOfNew[newSectionOfItem[j]] < 0 {
                    deletions.append(ItemPath(section: s, item: a))
                }
            }
        }

        var insertions: [ItemPath] = []
        var moves: [DiffPair<ItemPath>] = []
        var updates: [DiffPair<ItemPath>] = []
        var run: [Int] = []
        for t in new.indices {
            let home = oldSectionOfNew[t]
            if home < 0 { continue }  // an inserted section brings its items
            let items = new[t].items
            // Old item indices of the items that stayed in this section; -1 for the others.
            run.removeAll(keepingCapacity: true)
            for b in items.indices {
                let i = pairing.oldIndexOfNew[newStart[t] + b]
                run.append(i >= 0 && oldSectionOfItem[i] == home ? i - oldStart[home] : -1)
            }
            let staying = _longestIncreasingRun(run)
            for b in items.indices {
                let to = ItemPath(section: t, item: b)
                let i = pairing.oldIndexOfNew[newStart[t] + b]
                guard i >= 0, newSectionOfOld[oldSectionOfItem[i]] >= 0 else {
                    insertions.append(to)  // new, or its old section is deleted
                    continue
                }
                let s = oldSectionOfItem[i]
                let from = ItemPath(section: s, item: i - oldStart[s])
                if !staying[b] { moves.append(DiffPair(from: from, to: to)) }
                if old[s].items[from.item] != items[b] { updates.append(DiffPair(from: from, to: to)) }
            }
        }

        let changeCount = sectionDiff.changeCount + deletions.count + insertions.count + moves.count + updates.count
        if let reloadThreshold, changeCount > reloadThreshold {
            self.sections = Diff(reloadingFrom: oldModels, to: newModels, duplicates: sectionPairing.duplicates)
            self.itemDeletions = []
            self.itemInsertions = []
            self.itemMoves = []
            self.itemUpdates = []
            self.isReload = true
        } else {
            self.sections = sectionDiff
            self.itemDeletions = deletions
            self.itemInsertions = insertions
            self.itemMoves = moves
            self.itemUpdates = updates
            self.isReload = false
        }
        self.itemDuplicates = pairing.duplicates
    }

    /// The flat offset of each section's first item, and the section of each flat item.
    @inlinable
    static func flatten(_ sections: [Section]) -> (start: [Int], sectionOfItem: [Int]) {
        var start: [Int] = []
        start.reserveCapacity(sections.count)
        var total = 0
        for section in sections {
            start.append(total)
            total += section.items.count
        }
        var sectionOfItem: [Int] = []
        sectionOfItem.reserveCapacity(total)
        for (s, section) in sections.enumerated() {
            sectionOfItem.append(contentsOf: repeatElement(s, count: section.items.count))
        }
        return (start, sectionOfItem)
    }

    /// The number of changes: section changes plus item deletions, insertions, moves and updates.
    public var changeCount: Int {
        sections.changeCount + itemDeletions.count + itemInsertions.count + itemMoves.count
            + itemUpdates.count
    }

    /// Whether the old and new sections are equal.
    public var isEmpty: Bool { changeCount == 0 }
}

extension SectionedDiff: Sendable
where Model: Sendable, Item: Sendable, Model.DiffID: Sendable, Item.DiffID: Sendable {}

extension SectionedDiff: Equatable {}
