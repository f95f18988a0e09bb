import LoopKit
import PropertyBased
import Testing

/// Random old and new sections from a seed: section and item deletions, insertions, moves (also across
/// sections), updates and repeated identifiers.
let randomSectionedEdit = Gen.uint64().map { seed -> (old: [DiffRowSection], new: [DiffRowSection]) in
    var rng = DiffTestRNG(seed: seed)
    return diffRandomSections(&rng)
}

/// Whether some item deletion, insertion or move of `diff` touches a section the diff moves: exactly
/// when ``SectionedDiff/stages()`` needs its one extra stage. Computed here from the diff's lists.
func itemChangesTouchMovedSections(_ diff: SectionedDiff<DiffHeader, DiffRow>) -> Bool {
    let movedOld = Set(diff.sections.moves.map(\.from))
    let movedNew = Set(diff.sections.moves.map(\.to))
    return diff.itemDeletions.contains { movedOld.contains($0.section) }
        || diff.itemInsertions.contains { movedNew.contains($0.section) }
        || diff.itemMoves.contains { movedOld.contains($0.from.section) || movedNew.contains($0.to.section) }
}

@Suite("BatchStage")
struct BatchStageTests {
    func section(_ id: Int, title: Int = 0, _ items: [Int], value: Int = 0) -> DiffRowSection {
        DiffRowSection(DiffHeader(id: id, title: title), items: items.map { DiffRow(id: $0, value: value) })
    }

    // MARK: Properties over random data

    @Test("Every stage is valid, and performing the stages in order yields new")
    func stagesAreValidAndYieldNew() throws {
        var rng = DiffTestRNG(seed: 0x57A6)
        for _ in 0..<2_000 {
            let (old, new) = diffRandomSections(&rng)
            let stages = SectionedDiff(from: old, to: new).stages()
            var data = old
            for stage in stages {
                #expect(throws: Never.self, "old: \(old) new: \(new)") { try stage.validate(from: data) }
                data = stage.sections
            }
            #expect(data == new)
            #expect(try stages.reduce(old) { data, stage in try stage.apply(to: data) } == new)
            #expect(stages.count <= 3)
            #expect(stages.allSatisfy { $0.operationCount > 0 })
        }
    }

    @Test("Property: a table that rejects item changes in moved sections accepts every stage and ends at new")
    func stagesNeverChangeItemsInAMovedSection() async {
        await propertyCheck(count: 3_000, input: randomSectionedEdit) { edit in
            let stages = SectionedDiff(from: edit.old, to: edit.new).stages()
            let table = DiffRecordingTarget(edit.old)
            table.commit(stages)
            #expect(table.failures.isEmpty, "old: \(edit.old) new: \(edit.new) failures: \(table.failures)")
            #expect(table.displayed == edit.new)
            for stage in stages {
                #expect(DiffRecordingTarget.itemChangeInMovedSection(stage) == nil)
            }
        }
    }

    @Test("Property: the extra stage appears exactly when a moved section has item changes (fewest stages)")
    func extraStageOnlyWhenNeeded() async {
        await propertyCheck(count: 3_000, input: randomSectionedEdit) { edit in
            Self.checkExtraStage(edit.old, edit.new)
        }
    }

    static func checkExtraStage(_ old: [DiffRowSection], _ new: [DiffRowSection]) {
        let edit = (old: old, new: new)
        let diff = SectionedDiff(from: edit.old, to: edit.new)
        let stages = diff.stages()
        let hasReloadStage = !(diff.sections.updates.isEmpty && diff.itemUpdates.isEmpty)
        let hasStructure = !(diff.sections.deletions.isEmpty && diff.sections.insertions.isEmpty
            && diff.sections.moves.isEmpty && diff.itemDeletions.isEmpty && diff.itemInsertions.isEmpty
            && diff.itemMoves.isEmpty)
        let needsSplit = itemChangesTouchMovedSections(diff)
        let structure = Array(stages.prefix(stages.count - (hasReloadStage ? 1 : 0)))
        #expect(structure.count == (needsSplit ? 2 : hasStructure ? 1 : 0), "old: \(edit.old) new: \(edit.new)")
        if needsSplit {
            // Sections first (no item changes), then items (no section changes).
            #expect(structure[0].itemDeletions.isEmpty && structure[0].itemInsertions.isEmpty && structure[0].itemMoves.isEmpty)
            #expect(structure[1].sectionMoves.isEmpty && structure[1].sectionDeletions.isEmpty && structure[1].sectionInsertions.isEmpty)
        }
    }

    @Test("Property: duplicates and cross-section moves, dense: stages stay valid for a rejecting table")
    func denseDuplicatesAndCrossSectionMoves() async {
        let dense = Gen.uint64().map { seed -> (old: [DiffRowSection], new: [DiffRowSection]) in
            var rng = DiffTestRNG(seed: seed)
            return diffRandomSections(&rng, maxSections: 5, maxItems: 6, duplicatePercent: 30)
        }
        await propertyCheck(count: 2_000, input: dense) { edit in
            let table = DiffRecordingTarget(edit.old)
            table.commit(SectionedDiff(from: edit.old, to: edit.new).stages())
            #expect(table.failures.isEmpty, "old: \(edit.old) new: \(edit.new) failures: \(table.failures)")
            #expect(table.displayed == edit.new)
        }
    }

    @Test("A moved section that gains, loses and moves items: sections move first, items change after")
    func movedSectionWithItemChangesSplits() throws {
        let old = [section(1, [1, 2, 3]), section(2, [4, 5])]
        let new = [section(2, [5, 4, 3]), section(1, [1, 9])]  // section 2 moves up and gets item 3
        let diff = SectionedDiff(from: old, to: new)
        let stages = diff.stages()
        #expect(stages.count == 2)
        #expect(stages[0].sectionMoves.count == 1)
        #expect(stages[0].itemMoves.isEmpty && stages[0].itemDeletions.isEmpty && stages[0].itemInsertions.isEmpty)
        #expect(stages[0].sections == [old[1], old[0]])
        #expect(stages[1].sectionMoves.isEmpty)
        #expect(stages[1].itemDeletions == [ItemPath(section: 1, item: 1)])  // item 2, old section 0 now at 1
        #expect(stages[1].sections == new)
        let table = DiffRecordingTarget(old)
        table.commit(stages)
        #expect(table.failures.isEmpty)
        #expect(table.displayed == new)
    }

    @Test("A moved section without item changes moves in the one structure stage")
    func movedSectionWithoutItemChangesDoesNotSplit() {
        let old = [section(1, [1, 2]), section(2, [3]), section(3, [4])]
        let new = [section(3, [4]), section(1, [2]), section(2, [3])]  // 3 moves up; 1 loses item 1
        let stages = SectionedDiff(from: old, to: new).stages()
        #expect(stages.count == 1)
        #expect(stages[0].sectionMoves.count == 1 && stages[0].itemDeletions.count == 1)
        #expect(DiffRecordingTarget.itemChangeInMovedSection(stages[0]) == nil)
    }

    @Test("Stages of a reload are one valid reload stage")
    func reloadStageIsValid() throws {
        var rng = DiffTestRNG(seed: 0x4E10)
        for _ in 0..<300 {
            let (old, new) = diffRandomSections(&rng)
            let stages = SectionedDiff(from: old, to: new, reloadThreshold: 0).stages()
            if old == new { #expect(stages.isEmpty); continue }
            #expect(stages.count == 1 && stages[0].isReload)
            try stages[0].validate(from: old)
        }
    }

    // MARK: Examples

    @Test("A moved and updated item moves in stage 1 and reloads at its new path in stage 2")
    func movedItemReloadsInSecondStage() throws {
        let old = [section(1, [1, 2, 3])]
        var new = [section(1, [3, 1, 2])]
        new[0].items[0].value = 9
        let stages = SectionedDiff(from: old, to: new).stages()
        #expect(stages.count == 2)
        #expect(stages[0].itemMoves == [DiffPair(from: ItemPath(section: 0, item: 2), to: ItemPath(section: 0, item: 0))])
        #expect(stages[0].itemReloads.isEmpty)
        #expect(stages[0].sections[0].items[0].value == 0)  // old content until the reload
        #expect(stages[1].itemReloads == [ItemPath(section: 0, item: 0)])
        #expect(stages[1].itemMoves.isEmpty)
        #expect(stages[1].sections == new)
    }

    @Test("Only updates give a single reload stage")
    func updatesOnlyGiveOneStage() {
        let old = [section(1, [1, 2])]
        var new = old
        new[0].items[1].value = 3
        let stages = SectionedDiff(from: old, to: new).stages()
        #expect(stages.count == 1)
        #expect(stages[0].itemReloads == [ItemPath(section: 0, item: 1)])
    }

    @Test("A reloaded section reloads its items with it")
    func sectionReloadCoversItems() throws {
        let old = [section(1, title: 0, [1, 2])]
        var new = [section(1, title: 1, [1, 2])]
        new[0].items[0].value = 5
        let stages = SectionedDiff(from: old, to: new).stages()
        #expect(stages.count == 1)
        #expect(stages[0].sectionReloads == [0])
        #expect(stages[0].itemReloads.isEmpty)
        try stages[0].validate(from: old)
    }

    @Test("No changes give no stages")
    func noChangesNoStages() {
        let data = [section(1, [1, 2])]
        #expect(SectionedDiff(from: data, to: data).stages().isEmpty)
    }

    // MARK: The validator rejects each broken rule

    let before = [DiffRowSection(DiffHeader(id: 1, title: 0), items: [DiffRow(id: 1, value: 0), DiffRow(id: 2, value: 0)]),
                  DiffRowSection(DiffHeader(id: 2, title: 0), items: [DiffRow(id: 3, value: 0)])]

    @Test("Validator: reloading a moved item is rejected")
    func rejectsReloadOfMovedItem() {
        let after = [DiffRowSection(before[0].model, items: [before[0].items[1], before[0].items[0]]), before[1]]
        let stage = BatchStage(
            itemMoves: [DiffPair(from: ItemPath(section: 0, item: 0), to: ItemPath(section: 0, item: 1))],
            itemReloads: [ItemPath(section: 0, item: 0)], sections: after)
        #expect(throws: DiffError.reloadOfChangedPosition(.itemReload, .item(ItemPath(section: 0, item: 0)))) {
            try stage.validate(from: before)
        }
    }

    @Test("Validator: a path used twice in one stage is rejected")
    func rejectsPathUsedTwice() {
        let stage = BatchStage(
            itemDeletions: [ItemPath(section: 0, item: 0), ItemPath(section: 0, item: 0)],
            sections: before)
        #expect(throws: DiffError.positionUsedTwice(.itemDeletion, .item(ItemPath(section: 0, item: 0)))) {
            try stage.validate(from: before)
        }
    }

    @Test("Validator: an item change in a deleted section is rejected")
    func rejectsItemChangeInDeletedSection() {
        let stage = BatchStage(
            sectionDeletions: [1], itemDeletions: [ItemPath(section: 1, item: 0)], sections: [before[0]])
        #expect(throws: DiffError.itemInChangedSection(.itemDeletion, .item(ItemPath(section: 1, item: 0)))) {
            try stage.validate(from: before)
        }
    }

    @Test("Validator: an item change in a section the same batch moves is rejected")
    func rejectsItemChangeInMovedSection() throws {
        // Section 1 moves to the top and loses its item: the deletion is in the moved section.
        let losing = BatchStage(
            sectionMoves: [DiffPair(from: 1, to: 0)], itemDeletions: [ItemPath(section: 1, item: 0)],
            sections: [DiffRowSection(before[1].model, items: []), before[0]])
        #expect(throws: DiffError.itemInChangedSection(.itemDeletion, .item(ItemPath(section: 1, item: 0)))) {
            try losing.validate(from: before)
        }
        #expect(DiffRecordingTarget.itemChangeInMovedSection(losing) != nil)
        // Section 1 moves to the top and gains an item: the insertion is in the moved section.
        let gaining = BatchStage(
            sectionMoves: [DiffPair(from: 1, to: 0)], itemInsertions: [ItemPath(section: 0, item: 1)],
            sections: [DiffRowSection(before[1].model, items: before[1].items + [DiffRow(id: 8, value: 0)]), before[0]])
        #expect(throws: DiffError.itemInChangedSection(.itemInsertion, .item(ItemPath(section: 0, item: 1)))) {
            try gaining.validate(from: before)
        }
        #expect(DiffRecordingTarget.itemChangeInMovedSection(gaining) != nil)
        // The whole diff may do both at once: SectionedDiff.apply(to:) accepts it.
        let new = [DiffRowSection(before[1].model, items: before[1].items + [DiffRow(id: 8, value: 0)]), before[0]]
        #expect(try SectionedDiff(from: before, to: new).apply(to: before) == new)
    }

    @Test("Validator: an item insertion into an inserted section is rejected")
    func rejectsItemInsertionIntoInsertedSection() {
        let added = DiffRowSection(DiffHeader(id: 9, title: 0), items: [DiffRow(id: 9, value: 0)])
        let stage = BatchStage(
            sectionInsertions: [2], itemInsertions: [ItemPath(section: 2, item: 0)],
            sections: before + [added])
        #expect(throws: DiffError.itemInChangedSection(.itemInsertion, .item(ItemPath(section: 2, item: 0)))) {
            try stage.validate(from: before)
        }
    }

    @Test("Validator: counts that don't add up are rejected")
    func rejectsInconsistentCounts() {
        let after = [DiffRowSection(before[0].model, items: [before[0].items[0]]), before[1]]
        let stage = BatchStage(sections: after)  // an item vanished without a deletion
        #expect(throws: DiffError.inconsistentCount(section: 0, expected: 1, actual: 2)) {
            try stage.validate(from: before)
        }
    }

    @Test("Validator: operations that don't produce the stage's sections are rejected")
    func rejectsDataMismatch() {
        var after = before
        after[0].items[0].value = 1  // changed content without a reload
        #expect(throws: DiffError.dataMismatch(section: 0)) { try BatchStage(sections: after).validate(from: before) }
    }

    @Test("Validator: an out-of-range path is rejected")
    func rejectsOutOfRange() {
        let stage = BatchStage(itemDeletions: [ItemPath(section: 0, item: 5)], sections: before)
        #expect(throws: DiffError.outOfRange(.itemDeletion, .item(ItemPath(section: 0, item: 5)))) {
            try stage.validate(from: before)
        }
    }

    // MARK: BatchUpdateTarget

    @Test("commit performs each stage as one batch, data first, and the target ends at new")
    func commitDrivesTarget() {
        let old = [section(1, [1, 2, 3]), section(2, [4])]
        var new = [section(2, [4, 2]), section(3, [9]), section(1, [3, 1])]
        new[2].items[0].value = 1
        let table = DiffRecordingTarget(old)
        table.commit(SectionedDiff(from: old, to: new).stages())
        #expect(table.failures.isEmpty)
        #expect(table.displayed == new)
        // Section 2 moves up and receives item 2: the section moves in a batch of its own.
        #expect(table.calls == [
            "begin", "setSections", "insertSections", "moveSection", "end",
            "begin", "setSections", "moveItem", "moveItem", "end",
            "begin", "setSections", "reloadItems", "end",
        ])
    }

    @Test("commit of a reload stage calls reloadData")
    func commitReload() {
        let old = [section(1, [1])]
        let new = [section(2, [2])]
        let table = DiffRecordingTarget(old)
        table.commit(SectionedDiff(from: old, to: new, reloadThreshold: 0).stages())
        #expect(table.calls == ["reloadData"])
        #expect(table.displayed == new)
    }
}

/// A main-actor target, as a UIKit wrapper would be, conforming with an isolated conformance.
@MainActor
final class MainActorDiffTable {
    var sections: [DiffRowSection] = []
    var batches = 0
}

extension MainActorDiffTable: @MainActor BatchUpdateTarget {
    typealias Model = DiffHeader
    typealias Item = DiffRow
    func performBatchUpdates(_ updates: () -> Void) { batches += 1; updates() }
    func reloadData(_ sections: [DiffRowSection]) { self.sections = sections }
    func setSections(_ sections: [DiffRowSection]) { self.sections = sections }
    func deleteSections(_ sections: [Int]) {}
    func insertSections(_ sections: [Int]) {}
    func moveSection(_ section: Int, toSection newSection: Int) {}
    func reloadSections(_ sections: [Int]) {}
    func deleteItems(at paths: [ItemPath]) {}
    func insertItems(at paths: [ItemPath]) {}
    func moveItem(at path: ItemPath, to newPath: ItemPath) {}
    func reloadItems(at paths: [ItemPath]) {}
}

@Suite("BatchUpdateTarget on the main actor")
struct MainActorTargetTests {
    @Test("A main-actor view conforms with an isolated conformance and commits stages")
    @MainActor
    func mainActorConformance() {
        let old = [DiffRowSection(DiffHeader(id: 1, title: 0), items: [DiffRow(id: 1, value: 0)])]
        let new = [DiffRowSection(DiffHeader(id: 1, title: 0), items: [DiffRow(id: 2, value: 0), DiffRow(id: 1, value: 1)])]
        let table = MainActorDiffTable()
        table.commit(SectionedDiff(from: old, to: new).stages())
        #expect(table.batches == 2)
        #expect(table.sections == new)
    }
}
