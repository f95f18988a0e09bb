/// The changes that turn one array into another: deletions, insertions, moves and updates, found by
/// identity in O(n).
///
/// Elements are paired by ``Diffable/diffID`` (Heckel's algorithm). Unpaired old elements are
/// ``deletions`` (old offsets), unpaired new elements are ``insertions`` (new offsets). Paired elements
/// that changed their order relative to the others are ``moves``: a longest increasing subsequence keeps
/// the largest set of elements in place, so an element that merely shifts because others were inserted
/// or deleted is never reported as moved. Paired elements whose content differs (`!=`) are ``updates``,
/// whether or not they also moved.
///
/// The offsets follow the batch-update rules of table and collection views: deletions and move sources
/// are offsets in the old data, insertions and move destinations offsets in the new data, and elements
/// not named by any change keep their relative order. ``apply(to:)`` performs exactly that, and
/// ``collectionDifference`` converts to the standard library's type.
///
/// Repeated identifiers are paired in order (the k-th occurrence in the old data with the k-th in the
/// new data, extras are deletions or insertions) and listed in ``duplicates``.
///
/// ```swift
/// let diff = Diff(from: ["a", "b", "c"], to: ["c", "a", "b", "d"])
/// diff.moves        // [DiffPair(from: 2, to: 0)]
/// diff.insertions   // [3]
/// try diff.apply(to: ["a", "b", "c"])  // ["c", "a", "b", "d"]
/// ```
///
/// A `Diff` is a value: it is `Sendable` when its elements and identifiers are, and it carries the
/// elements it inserts, removes and updates, so it can be applied without the new data at hand.
///
/// A value: safe to use from any thread (`Sendable` when its type arguments are).
public struct Diff<Element: Diffable> {
    /// The number of elements in the old data.
    public let oldCount: Int
    /// The number of elements in the new data.
    public let newCount: Int
    /// Offsets in the old data of the elements removed, ascending.
    public let deletions: [Int]
    /// Offsets in the new data of the elements inserted, ascending.
    public let insertions: [Int]
    /// Elements that moved, from their old offset to their new one, ordered by new offset.
    public let moves: [DiffPair<Int>]
    /// Elements with the same identity and changed content, ordered by new offset. An element can be
    /// both moved and updated.
    public let updates: [DiffPair<Int>]
    /// Identifiers that occur more than once, each listed once: first those repeated in the old data,
    /// in order of their first occurrence there, then those repeated only in the new data, in order of
    /// their second occurrence there. Empty when every identifier is unique.
    public let duplicates: [Element.DiffID]
    /// Whether the change count exceeded the reload threshold passed to ``init(from:to:reloadThreshold:)``.
    ///
    /// A reload deletes every old element and inserts every new one (so ``apply(to:)`` still works); a
    /// UI should reload all its data instead of animating.
    public let isReload: Bool

    @usableFromInline let deletedElements: [Element]
    @usableFromInline let insertedElements: [Element]
    /// The old values of moved elements, aligned with `moves`.
    @usableFromInline let movedElements: [Element]
    /// The old values of updated elements, aligned with `updates`.
    @usableFromInline let replacedElements: [Element]
    /// The new values of updated elements, aligned with `updates`.
    @usableFromInline let updatedElements: [Element]

    @inlinable
    init(
        oldCount: Int, newCount: Int,
        deletions: [Int], insertions: [Int], moves: [DiffPair<Int>], updates: [DiffPair<Int>],
        duplicates: [Element.DiffID], isReload: Bool,
        deletedElements: [Element], insertedElements: [Element], movedElements: [Element],
        replacedElements: [Element], updatedElements: [Element]
    ) {
        self.oldCount = oldCount
        self.newCount = newCount
        self.deletions = deletions
        self.insertions = insertions
        self.moves = moves
        self.updates = updates
        self.duplicates = duplicates
        self.isReload = isReload
        self.deletedElements = deletedElements
        self.insertedElements = insertedElements
        self.movedElements = movedElements
        self.replacedElements = replacedElements
        self.updatedElements = updatedElements
    }

    /// Computes the changes from `old` to `new`.
    ///
    /// O(n) time and memory for the pairing (plus O(m log n) for the m elements out of order, to find
    /// the moves). Never fails: repeated identifiers are paired in order and listed in ``duplicates``.
    ///
    /// Safe from any thread: a pure function of its inputs.
    ///
    /// - Parameters:
    ///   - old: The data before the change.
    ///   - new: The data after the change.
    ///   - reloadThreshold: When the number of changes (deletions, insertions, moves and updates)
    ///     exceeds this, the result is a reload (``isReload``): every old element deleted, every new one
    ///     inserted. `nil` (the default) never reloads.
    @inlinable
    public init(from old: [Element], to new: [Element], reloadThreshold: Int? = nil) {
        let pairing = _DiffPairing(
            oldCount: old.count, newCount: new.count,
            oldID: { old[$0].diffID }, newID: { new[$0].diffID })
        self.init(from: old, to: new, pairing: pairing, reloadThreshold: reloadThreshold)
    }

    /// Computes the changes from a pairing of `old` and `new`.
    @inlinable
    init(from old: [Element], to new: [Element], pairing: _DiffPairing<Element.DiffID>, reloadThreshold: Int?) {
        var deletions: [Int] = []
        var deletedElements: [Element] = []
        for i in 0..<old.count where pairing.newIndexOfOld[i] < 0 {
            deletions.append(i)
            deletedElements.append(old[i])
        }
        var insertions: [Int] = []
        var insertedElements: [Element] = []
        for j in 0..<new.count where pairing.oldIndexOfNew[j] < 0 {
            insertions.append(j)
            insertedElements.append(new[j])
        }
        if let reloadThreshold, deletions.count + insertions.count > reloadThreshold {
            self.init(reloadingFrom: old, to: new, duplicates: pairing.duplicates)
            return
        }

        let staying = _longestIncreasingRun(pairing.oldIndexOfNew)
        var moves: [DiffPair<Int>] = []
        var movedElements: [Element] = []
        var updates: [DiffPair<Int>] = []
        var replacedElements: [Element] = []
        var updatedElements: [Element] = []
        for j in 0..<new.count {
            let i = pairing.oldIndexOfNew[j]
            if i < 0 { continue }
            if !staying[j] {
                moves.append(DiffPair(from: i, to: j))
                movedElements.append(old[i])
            }
            if old[i] != new[j] {
                updates.append(DiffPair(from: i, to: j))
                replacedElements.append(old[i])
                updatedElements.append(new[j])
            }
        }
        if let reloadThreshold,
            deletions.count + insertions.count + moves.count + updates.count > reloadThreshold
        {
            self.init(reloadingFrom: old, to: new, duplicates: pairing.duplicates)
            return
        }
        self.init(
            oldCount: old.count, newCount: new.count,
            deletions: deletions, insertions: insertions, moves: moves, updates: updates,
            duplicates: pairing.duplicates, isReload: false,
            deletedElements: deletedElements, insertedElements: insertedElements,
            movedElements: movedElements, replacedElements: replacedElements,
            updatedElements: updatedElements)
    }

    /// A reload: every old element deleted, every new element inserted.
    @inlinable
    init(reloadingFrom old: [Element], to new: [Element], duplicates: [Element.DiffID]) {
        self.init(
            oldCount: old.count, newCount: new.count,
            deletions: Array(old.indices), insertions: Array(new.indices), moves: [], updates: [],
            duplicates: duplicates, isReload: true,
            deletedElements: old, insertedElements: new, movedElements: [],
            replacedElements: [], updatedElements: [])
    }

    /// The number of changes: deletions, insertions, moves and updates (an element both moved and
    /// updated counts twice).
    public var changeCount: Int {
        deletions.count + insertions.count + moves.count + updates.count
    }

    /// Whether the old and new data are equal, element for element.
    public var isEmpty: Bool { changeCount == 0 }
}

extension Diff: Sendable where Element: Sendable, Element.DiffID: Sendable {}

extension Diff: Equatable {}
