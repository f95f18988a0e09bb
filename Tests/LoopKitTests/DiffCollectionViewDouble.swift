import LoopKit

/// A collection-view double that performs each batch the way `UICollectionView.performBatchUpdates`
/// does, written apart from LoopKit's own validator so that it can catch what that validator misses.
///
/// It keeps the cells it shows (each with the content it was configured with) and, for each batch:
///
/// - reads deletions, move sources and reloads as positions *before* the batch, and insertions and move
///   destinations as positions *after* it;
/// - performs a reload as UIKit does, as a deletion at the old position and an insertion at the same
///   position read as new; so a reload that the batch's other changes shift either collides with another
///   insertion (UIKit raises) or refreshes the wrong cell;
/// - rejects a position used twice, a reload of an item that is deleted or moved, an item change in a
///   section that the batch deletes, inserts, reloads or moves, counts that don't add up, and a reload
///   whose item or section lands elsewhere than its old position;
/// - builds the cells it would show and checks them against its data source (the stage's sections).
///
/// Use it on one thread.
final class DiffCollectionViewDouble: BatchUpdateTarget {
    typealias Model = DiffHeader
    typealias Item = DiffRow
    typealias Stage = BatchStage<DiffHeader, DiffRow>

    /// The cells shown: changed only by batches without violations (or by a reload).
    private(set) var displayed: [DiffRowSection]
    /// Each rule a batch broke, as "batch n: reason"; a batch that breaks one leaves `displayed` alone.
    private(set) var violations: [String] = []
    /// The number of batches performed.
    private(set) var batchCount = 0
    private var pending = Stage(sections: [])

    init(_ data: [DiffRowSection]) { displayed = data }

    func performBatchUpdates(_ updates: () -> Void) {
        pending = Stage(sections: [])
        updates()
        batchCount += 1
        let found = Self.violations(of: pending, from: displayed)
        if found.isEmpty {
            displayed = pending.sections
        } else {
            violations += found.map { "batch \(batchCount): \($0)" }
        }
    }

    func reloadData(_ sections: [DiffRowSection]) { displayed = sections }
    func setSections(_ sections: [DiffRowSection]) { pending.sections = sections }
    func deleteSections(_ s: [Int]) { pending.sectionDeletions += s }
    func insertSections(_ s: [Int]) { pending.sectionInsertions += s }
    func moveSection(_ s: Int, toSection t: Int) { pending.sectionMoves.append(DiffPair(from: s, to: t)) }
    func reloadSections(_ s: [Int]) { pending.sectionReloads += s }
    func deleteItems(at p: [ItemPath]) { pending.itemDeletions += p }
    func insertItems(at p: [ItemPath]) { pending.itemInsertions += p }
    func moveItem(at p: ItemPath, to q: ItemPath) { pending.itemMoves.append(DiffPair(from: p, to: q)) }
    func reloadItems(at p: [ItemPath]) { pending.itemReloads += p }

    /// The rules `stage` breaks when a collection view showing `before` performs it as one batch, with
    /// `stage.sections` as its data source afterwards; empty when it performs cleanly.
    static func violations(of stage: Stage, from before: [DiffRowSection]) -> [String] {
        var problems: [String] = []
        let after = stage.sections
        if stage.isReload { return [] }

        // Sections, old side: deleted, moved away or reloaded (a reload deletes at its old index).
        enum OldUse { case deleted, moved, reloaded }
        var oldUse = [OldUse?](repeating: nil, count: before.count)
        func useOld(_ s: Int, _ use: OldUse) {
            guard before.indices.contains(s) else { return problems.append("section \(s) \(use) is out of range") }
            if let earlier = oldUse[s] { return problems.append("old section \(s) is \(earlier) and \(use)") }
            oldUse[s] = use
        }
        for s in stage.sectionDeletions { useOld(s, .deleted) }
        for move in stage.sectionMoves { useOld(move.from, .moved) }
        for s in stage.sectionReloads { useOld(s, .reloaded) }

        // Sections, new side: inserted, moved in, or reloaded (a reload inserts at the same index).
        enum NewSource: Equatable {
            case inserted, reloaded, moved(from: Int), kept(from: Int)
            var isKept: Bool { if case .kept = self { true } else { false } }
        }
        var source = [NewSource?](repeating: nil, count: after.count)
        func fillNew(_ t: Int, _ filler: NewSource) {
            guard after.indices.contains(t) else { return problems.append("new section \(t) (\(filler)) is out of range") }
            if let earlier = source[t] { return problems.append("new section \(t) is \(earlier) and \(filler)") }
            source[t] = filler
        }
        for t in stage.sectionInsertions { fillNew(t, .inserted) }
        for move in stage.sectionMoves { fillNew(move.to, .moved(from: move.from)) }
        for s in stage.sectionReloads { fillNew(s, .reloaded) }
        let kept = before.indices.filter { oldUse[$0] == nil }
        let open = after.indices.filter { source[$0] == nil }
        guard kept.count == open.count else {
            return problems + ["\(kept.count) sections remain for \(open.count) open places"]
        }
        var newOfOld = [Int](repeating: -1, count: before.count)
        for (s, t) in zip(kept, open) {
            source[t] = .kept(from: s)
            newOfOld[s] = t
        }
        for move in stage.sectionMoves where after.indices.contains(move.to) { newOfOld[move.from] = move.to }
        // Where a reloaded section would land if the batch kept it: it must be its old index.
        do {
            let reloaded = Set(stage.sectionReloads)
            let stays = before.indices.filter { oldUse[$0] == nil || reloaded.contains($0) }
            let places = after.indices.filter { source[$0] == .reloaded || source[$0]?.isKept == true }
            for (s, t) in zip(stays, places) where reloaded.contains(s) && s != t {
                problems.append("the reload of section \(s) is ambiguous: the same batch shifts that section to \(t)")
            }
        }

        // Items, old side: deleted, moved away or reloaded, only in sections that stay and don't move.
        var itemOldUse = before.map { [OldUse?](repeating: nil, count: $0.items.count) }
        func useOldItem(_ p: ItemPath, _ use: OldUse) {
            guard before.indices.contains(p.section), before[p.section].items.indices.contains(p.item) else {
                return problems.append("item \(p) \(use) is out of range")
            }
            if let sectionUse = oldUse[p.section] {
                return problems.append("item \(p) is \(use) in a section that is \(sectionUse)")
            }
            if let earlier = itemOldUse[p.section][p.item] { return problems.append("old item \(p) is \(earlier) and \(use)") }
            itemOldUse[p.section][p.item] = use
        }
        for p in stage.itemDeletions { useOldItem(p, .deleted) }
        for move in stage.itemMoves { useOldItem(move.from, .moved) }
        for p in stage.itemReloads { useOldItem(p, .reloaded) }

        // Items, new side: inserted, moved in, or reloaded (an insertion at the same path), only in
        // sections that were kept in place.
        var slots = after.map { [DiffRow?](repeating: nil, count: $0.items.count) }
        var filledBy = after.map { [String?](repeating: nil, count: $0.items.count) }
        func fillItem(_ q: ItemPath, _ what: String, _ cell: DiffRow?) {
            guard after.indices.contains(q.section), after[q.section].items.indices.contains(q.item) else {
                return problems.append("new item \(q) (\(what)) is out of range")
            }
            guard source[q.section]?.isKept == true else {
                return problems.append("new item \(q) (\(what)) is in a section that is \(source[q.section].map { "\($0)" } ?? "unfilled")")
            }
            if let earlier = filledBy[q.section][q.item] {
                return problems.append("new item \(q) is filled twice: \(earlier) and \(what)")
            }
            filledBy[q.section][q.item] = what
            slots[q.section][q.item] = cell ?? after[q.section].items[q.item]
        }
        for q in stage.itemInsertions { fillItem(q, "inserted", nil) }
        for move in stage.itemMoves where before.indices.contains(move.from.section)
            && before[move.from.section].items.indices.contains(move.from.item) {
            fillItem(move.to, "moved from \(move.from)", before[move.from.section].items[move.from.item])
        }
        for p in stage.itemReloads { fillItem(p, "reloaded at \(p)", nil) }
        guard problems.isEmpty else { return problems }

        // The cells after the batch; a kept item keeps its cell and its old content.
        var shown: [DiffRowSection] = []
        for t in after.indices {
            switch source[t]! {
            case .inserted, .reloaded:
                shown.append(after[t])
            case .moved(let s):
                if before[s].items.count != after[t].items.count {
                    problems.append("moved section \(s) has \(before[s].items.count) items, its data source \(after[t].items.count)")
                }
                shown.append(before[s])
            case .kept(let s):
                let remaining = before[s].items.indices.filter { itemOldUse[s][$0] == nil }
                let openSlots = after[t].items.indices.filter { slots[t][$0] == nil }
                guard remaining.count == openSlots.count else {
                    problems.append("section \(t): \(remaining.count) items remain for \(openSlots.count) open places")
                    shown.append(after[t])
                    continue
                }
                for (a, b) in zip(remaining, openSlots) { slots[t][b] = before[s].items[a] }
                // Where a reloaded item would land if the batch kept it: it must be its old path.
                let stays = before[s].items.indices.filter { itemOldUse[s][$0] == nil || itemOldUse[s][$0] == .reloaded }
                let places = after[t].items.indices.filter { filledBy[t][$0] == nil || filledBy[t][$0]!.hasPrefix("reloaded") }
                for (a, b) in zip(stays, places) where itemOldUse[s][a] == .reloaded && (s != t || a != b) {
                    problems.append("the reload of item [\(s), \(a)] is ambiguous: the same batch shifts that item to [\(t), \(b)]")
                }
                shown.append(DiffRowSection(before[s].model, items: slots[t].map { $0! }))
            }
        }
        for t in after.indices where shown[t] != after[t] {
            problems.append("section \(t) shows \(shown[t]) but its data source has \(after[t])")
        }
        return problems
    }
}
