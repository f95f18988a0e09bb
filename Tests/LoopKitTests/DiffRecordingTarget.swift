import LoopKit

/// A table double for batch updates: keeps its own copy of the data, rebuilds each batch it is given as
/// a stage, applies that stage to its copy and checks the result is the stage's data.
///
/// Besides the rules ``BatchStage/validate(from:)`` checks, it enforces on its own the rule real table
/// and collection views crash or mis-animate on: no item insertion, deletion, move or reload in a
/// section that the same batch moves (old index for deletions, move sources and reloads; new index for
/// insertions and move destinations).
///
/// It records every call (`calls`), every batch it performed (`batches`) and every stage that broke the
/// batch rules or didn't yield its data (`failures`; the copy is left as it was). `insideBatch` runs
/// inside each batch after its operations, where a data source's model must already be the stage's.
/// Use it on one thread.
final class DiffRecordingTarget: BatchUpdateTarget {
    typealias Model = DiffHeader
    typealias Item = DiffRow

    /// The target's own copy of the data, changed only by applying valid stages (or by a reload).
    private(set) var displayed: [DiffRowSection]
    /// Every call, by name, with "begin"/"end" around each batch.
    private(set) var calls: [String] = []
    /// The stages performed, as rebuilt from the calls.
    private(set) var batches: [BatchStage<DiffHeader, DiffRow>] = []
    /// Why stages were rejected.
    private(set) var failures: [DiffError] = []
    /// How many times the data was replaced by `reloadData`.
    private(set) var reloads = 0
    /// Runs inside each batch, after its operations, with the stage rebuilt from them.
    var insideBatch: ((BatchStage<DiffHeader, DiffRow>) -> Void)?
    private var pending = BatchStage<DiffHeader, DiffRow>(sections: [])

    init(_ data: [DiffRowSection]) { displayed = data }

    func performBatchUpdates(_ updates: () -> Void) {
        calls.append("begin")
        pending = BatchStage(sections: [])
        updates()
        insideBatch?(pending)
        if let violation = Self.itemChangeInMovedSection(pending) {
            failures.append(violation)
            calls.append("end")
            return
        }
        do {
            try pending.validate(from: displayed)
            displayed = pending.sections
            batches.append(pending)
        } catch {
            failures.append(error)
        }
        calls.append("end")
    }
    /// The first item change of `stage` that touches a section the stage moves, as the error a validator
    /// would report, or nil.
    static func itemChangeInMovedSection(_ stage: BatchStage<DiffHeader, DiffRow>) -> DiffError? {
        let movedOld = Set(stage.sectionMoves.map(\.from))
        let movedNew = Set(stage.sectionMoves.map(\.to))
        if let path = stage.itemDeletions.first(where: { movedOld.contains($0.section) }) {
            return .itemInChangedSection(.itemDeletion, .item(path))
        }
        if let path = stage.itemReloads.first(where: { movedOld.contains($0.section) }) {
            return .itemInChangedSection(.itemReload, .item(path))
        }
        if let path = stage.itemInsertions.first(where: { movedNew.contains($0.section) }) {
            return .itemInChangedSection(.itemInsertion, .item(path))
        }
        if let move = stage.itemMoves.first(where: { movedOld.contains($0.from.section) || movedNew.contains($0.to.section) }) {
            return .itemInChangedSection(.itemMove, .item(movedOld.contains(move.from.section) ? move.from : move.to))
        }
        return nil
    }

    func reloadData(_ sections: [DiffRowSection]) {
        calls.append("reloadData")
        reloads += 1
        displayed = sections
    }
    func setSections(_ sections: [DiffRowSection]) { calls.append("setSections"); pending.sections = sections }
    func deleteSections(_ s: [Int]) { calls.append("deleteSections"); pending.sectionDeletions += s }
    func insertSections(_ s: [Int]) { calls.append("insertSections"); pending.sectionInsertions += s }
    func moveSection(_ s: Int, toSection t: Int) { calls.append("moveSection"); pending.sectionMoves.append(DiffPair(from: s, to: t)) }
    func reloadSections(_ s: [Int]) { calls.append("reloadSections"); pending.sectionReloads += s }
    func deleteItems(at p: [ItemPath]) { calls.append("deleteItems"); pending.itemDeletions += p }
    func insertItems(at p: [ItemPath]) { calls.append("insertItems"); pending.itemInsertions += p }
    func moveItem(at p: ItemPath, to q: ItemPath) { calls.append("moveItem"); pending.itemMoves.append(DiffPair(from: p, to: q)) }
    func reloadItems(at p: [ItemPath]) { calls.append("reloadItems"); pending.itemReloads += p }
}
