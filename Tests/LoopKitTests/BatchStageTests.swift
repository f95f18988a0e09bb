import LoopKit
import PropertyBased
import Testing

/// Random old and new sections from a seed: section and item deletions, insertions, moves (also across
/// sections), updates and repeated identifiers.
let randomSectionedEdit = Gen.uint64().map { seed -> (old: [DiffRowSection], new: [DiffRowSection]) in
    var rng = DiffTestRNG(seed: seed)
    return diffRandomSections(&rng)
}

/// Random old and new sections from a seed, most of them moving a section whose items change and
/// often whose model changes too (``diffRandomSectionsMovingEdited(_:)``).
let randomMovingEdit = Gen.uint64().map { seed -> (old: [DiffRowSection], new: [DiffRowSection]) in
    var rng = DiffTestRNG(seed: seed)
    return diffRandomSectionsMovingEdited(&rng)
}

/// Random old and new sections from a seed, most of them moving sections while items cross them and
/// updated items sit behind the arrivals (``diffRandomSectionsShiftingReloads(_:)``).
let randomShiftingEdit = Gen.uint64().map { seed -> (old: [DiffRowSection], new: [DiffRowSection]) in
    var rng = DiffTestRNG(seed: seed)
    return diffRandomSectionsShiftingReloads(&rng)
}

/// Whether `diff` has the shape that put a shifted reload into a stage: an item leaves a section that
/// moves and changes items for a section that is not reloaded, and an updated item lands behind it there.
func hasUpdateBehindItemFromMovedSection(_ diff: SectionedDiff<DiffHeader, DiffRow>) -> Bool {
    let whole = movedSectionsWithItemChanges(diff)
    let oldOfNew = Dictionary(uniqueKeysWithValues: diff.sections.moves.map { ($0.to, $0.from) })
    let wholeOld = Set(whole.compactMap { oldOfNew[$0] })
    let reloaded = whole.union(diff.sections.updates.map(\.to))
    var firstArrival: [Int: Int] = [:]
    for move in diff.itemMoves where wholeOld.contains(move.from.section) && !reloaded.contains(move.to.section) {
        firstArrival[move.to.section] = min(firstArrival[move.to.section] ?? .max, move.to.item)
    }
    return diff.itemUpdates.contains { update in
        !wholeOld.contains(update.from.section) && update.to.item > firstArrival[update.to.section] ?? .max
    }
}

/// The new indices of the sections that `diff` moves and whose items some item deletion, insertion or
/// move touches: the sections ``SectionedDiff/stages()`` moves in stage 1 and reloads in stage 2.
/// Computed here from the diff's lists.
func movedSectionsWithItemChanges(_ diff: SectionedDiff<DiffHeader, DiffRow>) -> Set<Int> {
    let newOfOld = Dictionary(uniqueKeysWithValues: diff.sections.moves.map { ($0.from, $0.to) })
    let movedNew = Set(diff.sections.moves.map(\.to))
    var result = Set<Int>()
    for path in diff.itemDeletions { if let t = newOfOld[path.section] { result.insert(t) } }
    for path in diff.itemInsertions where movedNew.contains(path.section) { result.insert(path.section) }
    for move in diff.itemMoves {
        if let t = newOfOld[move.from.section] { result.insert(t) }
        if movedNew.contains(move.to.section) { result.insert(move.to.section) }
    }
    return result
}

/// Whether `diff` has the case that took three stages before issue 21: a section that is moved and
/// updated and gains, loses or moves items.
func hasMovedUpdatedSectionWithItemChanges(_ diff: SectionedDiff<DiffHeader, DiffRow>) -> Bool {
    !movedSectionsWithItemChanges(diff).isDisjoint(with: diff.sections.updates.map(\.to))
}

/// Checks that `stages` performed from `old` are valid, at most two, and end at `new`: each stage by
/// ``BatchStage/validate(from:)`` and by a collection-view double performing it as one batch, and all
/// of them through a table double that rejects item changes in moved sections.
func checkTwoValidStages(_ old: [DiffRowSection], _ new: [DiffRowSection], sourceLocation: SourceLocation = #_sourceLocation) {
    let stages = SectionedDiff(from: old, to: new).stages()
    #expect(stages.count <= 2, "old: \(old) new: \(new)", sourceLocation: sourceLocation)
    var data = old
    for stage in stages {
        #expect(throws: Never.self, "old: \(old) new: \(new)", sourceLocation: sourceLocation) { try stage.validate(from: data) }
        let violations = DiffCollectionViewDouble.violations(of: stage, from: data)
        #expect(violations.isEmpty, "old: \(old) new: \(new) stage: \(stage) violations: \(violations)", sourceLocation: sourceLocation)
        data = stage.sections
    }
    #expect(data == new, "old: \(old) new: \(new)", sourceLocation: sourceLocation)
    let table = DiffRecordingTarget(old)
    table.commit(stages)
    #expect(table.failures.isEmpty, "old: \(old) new: \(new) failures: \(table.failures)", sourceLocation: sourceLocation)
    #expect(table.displayed == new, sourceLocation: sourceLocation)
    let view = DiffCollectionViewDouble(old)
    view.commit(stages)
    #expect(view.violations.isEmpty, "old: \(old) new: \(new) violations: \(view.violations)", sourceLocation: sourceLocation)
    #expect(view.displayed == new, sourceLocation: sourceLocation)
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
            #expect(stages.count <= 2)
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

    @Test("Property: at most two stages, each valid, ending at new, also when moved sections are updated and change items")
    func atMostTwoStages() async {
        await propertyCheck(count: 3_000, input: randomMovingEdit) { edit in
            checkTwoValidStages(edit.old, edit.new)
        }
        await propertyCheck(count: 1_000, input: randomSectionedEdit) { edit in
            checkTwoValidStages(edit.old, edit.new)
        }
    }

    @Test("Property: a collection view performing each stage as one batch accepts it, with no reload shifted by its batch, when sections move while items cross them and are updated")
    func everyStageObeysTheCollectionViewRules() async {
        await propertyCheck(count: 4_000, input: randomShiftingEdit) { edit in
            checkTwoValidStages(edit.old, edit.new)
        }
        await propertyCheck(count: 1_000, input: randomMovingEdit) { edit in
            checkTwoValidStages(edit.old, edit.new)
        }
    }

    @Test("The shifting-edit generator often gives an updated item behind an item that leaves a moved section")
    func shiftingEditGeneratorCoversTheShiftedReload() {
        var rng = DiffTestRNG(seed: 0x5E1F)
        var shape = 0, duplicates = 0
        let runs = 1_000
        for _ in 0..<runs {
            let (old, new) = diffRandomSectionsShiftingReloads(&rng)
            let diff = SectionedDiff(from: old, to: new)
            if hasUpdateBehindItemFromMovedSection(diff) { shape += 1 }
            if !diff.itemDuplicates.isEmpty { duplicates += 1 }
        }
        #expect(shape > runs / 20, "updated items behind an item from a moved section: \(shape)")
        #expect(duplicates > runs / 20, "repeated item identifiers: \(duplicates)")
    }

    @Test("The moving-edit generator often gives a moved, updated section with item changes, and the other mixes")
    func movingEditGeneratorCoversTheHardCases() {
        var rng = DiffTestRNG(seed: 0x21)
        var movedUpdated = 0, movedOnly = 0, movedOnlyWithUpdatesElsewhere = 0, crossWithTakenWhole = 0
        let runs = 1_000
        for _ in 0..<runs {
            let (old, new) = diffRandomSectionsMovingEdited(&rng)
            let diff = SectionedDiff(from: old, to: new)
            let whole = movedSectionsWithItemChanges(diff)
            let updated = Set(diff.sections.updates.map(\.to))
            if !whole.isDisjoint(with: updated) { movedUpdated += 1 }
            if !whole.subtracting(updated).isEmpty {
                movedOnly += 1
                if diff.itemUpdates.contains(where: { !whole.contains($0.to.section) }) || !updated.subtracting(whole).isEmpty {
                    movedOnlyWithUpdatesElsewhere += 1
                }
            }
            let movedFrom = Dictionary(uniqueKeysWithValues: diff.sections.moves.map { ($0.to, $0.from) })
            let wholeOld = Set(whole.compactMap { movedFrom[$0] })
            if diff.itemMoves.contains(where: { wholeOld.contains($0.from.section) != whole.contains($0.to.section) }) {
                crossWithTakenWhole += 1
            }
        }
        #expect(movedUpdated > runs / 5, "moved and updated with item changes: \(movedUpdated)")
        #expect(movedOnly > runs / 10, "moved, not updated, with item changes: \(movedOnly)")
        #expect(movedOnlyWithUpdatesElsewhere > runs / 20, "the same with updates elsewhere: \(movedOnlyWithUpdatesElsewhere)")
        #expect(crossWithTakenWhole > runs / 10, "items moving in or out of such a section: \(crossWithTakenWhole)")
    }

    @Test("Property: no stage is empty and none is extra: a structure stage when there is structure, a content stage when there is content")
    func fewestStages() async {
        await propertyCheck(count: 3_000, input: randomMovingEdit) { edit in
            let diff = SectionedDiff(from: edit.old, to: edit.new)
            let stages = diff.stages()
            let whole = movedSectionsWithItemChanges(diff)
            let hasStructure = !(diff.sections.deletions.isEmpty && diff.sections.insertions.isEmpty
                && diff.sections.moves.isEmpty && diff.itemDeletions.isEmpty && diff.itemInsertions.isEmpty
                && diff.itemMoves.isEmpty)
            let hasContent = !(diff.sections.updates.isEmpty && diff.itemUpdates.isEmpty && whole.isEmpty)
            #expect(stages.count == (hasStructure ? 1 : 0) + (hasContent ? 1 : 0), "old: \(edit.old) new: \(edit.new)")
            #expect(stages.allSatisfy { $0.operationCount > 0 })
            // The moved sections whose items change are reloaded in the last stage, and no item change
            // in them is listed.
            if let last = stages.last, !whole.isEmpty {
                #expect(whole.isSubset(of: last.sectionReloads), "old: \(edit.old) new: \(edit.new)")
                let moved = Set(stages[0].sectionMoves.map(\.to))
                #expect(!stages[0].itemInsertions.contains { moved.contains($0.section) })
                #expect(!last.itemReloads.contains { whole.contains($0.section) })
            }
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

    @Test("Issue 21: a section moved and updated that gains an item takes two stages, move then reload")
    func movedUpdatedSectionGainingAnItemTakesTwoStages() throws {
        // old [S1: - | S2: -], new [S2': 1:2 | S1: -]: S2 moves to the top, its title changes, it gains item 1.
        let old = [section(1, []), section(2, [])]
        let new = [section(2, title: 1, [1], value: 2), section(1, [])]
        let diff = SectionedDiff(from: old, to: new)
        #expect(diff.sections.moves == [DiffPair(from: 1, to: 0)])
        let stages = diff.stages()
        #expect(stages.count == 2)
        #expect(stages[0].sectionMoves == [DiffPair(from: 1, to: 0)])
        #expect(stages[0].itemInsertions.isEmpty)
        #expect(stages[0].sections == [old[1], old[0]])
        try stages[0].validate(from: old)
        #expect(stages[1].sectionReloads == [0])
        #expect(stages[1].itemInsertions.isEmpty && stages[1].itemReloads.isEmpty)
        #expect(stages[1].sections == new)
        try stages[1].validate(from: stages[0].sections)
        let table = DiffRecordingTarget(old)
        table.commit(stages)
        #expect(table.failures.isEmpty)
        #expect(table.displayed == new)
    }

    @Test("A moved section that gains, loses and moves items, its model unchanged, moves in stage 1 and is reloaded in stage 2")
    func movedSectionWithItemChangesIsReloaded() throws {
        let old = [section(1, [1, 2, 3]), section(2, [4, 5])]
        let new = [section(2, [5, 4, 3]), section(1, [1, 9])]  // section 2 moves up and gets item 3
        let diff = SectionedDiff(from: old, to: new)
        let stages = diff.stages()
        #expect(stages.count == 2)
        // Section 1 stays and keeps its item animations: item 2 deleted, item 3 leaves for the reloaded
        // section 2 (a deletion here), item 9 inserted.
        #expect(stages[0].sectionMoves == [DiffPair(from: 1, to: 0)])
        #expect(stages[0].itemDeletions == [ItemPath(section: 0, item: 1), ItemPath(section: 0, item: 2)])
        #expect(stages[0].itemInsertions == [ItemPath(section: 1, item: 1)])
        #expect(stages[0].itemMoves.isEmpty)
        #expect(stages[0].sections == [old[1], new[1]])
        #expect(stages[1].sectionReloads == [0])
        #expect(stages[1].itemDeletions.isEmpty && stages[1].itemInsertions.isEmpty && stages[1].itemMoves.isEmpty)
        #expect(stages[1].sections == new)
        let table = DiffRecordingTarget(old)
        table.commit(stages)
        #expect(table.failures.isEmpty)
        #expect(table.displayed == new)
    }

    @Test("An item leaving a reloaded moved section for a section that stays is inserted there in stage 2; an update behind it is replaced, one ahead reloaded")
    func itemFromReloadedSectionArrivesInSecondStage() throws {
        // Section 2 moves up and loses item 4 to section 1, whose items 1 and 3 are updated.
        let old = [section(1, [1, 2, 3]), section(2, [4, 5])]
        var new = [section(2, [5]), section(1, [1, 4, 2, 3])]
        new[1].items[0].value = 7
        new[1].items[3].value = 7
        let stages = SectionedDiff(from: old, to: new).stages()
        #expect(stages.count == 2)
        #expect(stages[0].sectionMoves == [DiffPair(from: 1, to: 0)])
        #expect(stages[0].itemDeletions.isEmpty && stages[0].itemInsertions.isEmpty && stages[0].itemMoves.isEmpty)
        #expect(stages[0].sections == [old[1], old[0]])  // item 4 is shown once, in section 2, until stage 2
        #expect(stages[1].sectionReloads == [0])
        // Item 1 is ahead of item 4 and reloads in place; item 3, behind it, moves from [1, 2] to [1, 3]
        // within the stage, so it is deleted and inserted rather than reloaded.
        #expect(stages[1].itemInsertions == [ItemPath(section: 1, item: 1), ItemPath(section: 1, item: 3)])
        #expect(stages[1].itemDeletions == [ItemPath(section: 1, item: 2)])
        #expect(stages[1].itemReloads == [ItemPath(section: 1, item: 0)])
        #expect(stages[1].sections == new)
        checkTwoValidStages(old, new)
    }

    @Test("Reported: an update behind an item that leaves a moved section is not reloaded at a path the same stage shifts")
    func updateBehindItemFromMovedSectionIsNotShifted() throws {
        // old [S1: 1 | S2: 2], new [S2: - | S1: 2 1']: S2 moves 1 -> 0 and loses item 2, which stays at
        // [1, 0] by moving into S1; item 1 is updated, [0, 0] -> [1, 1].
        let old = [section(1, [1]), section(2, [2])]
        var new = [section(2, []), section(1, [2, 1])]
        new[1].items[1].value = 5
        let diff = SectionedDiff(from: old, to: new)
        #expect(diff.sections.moves == [DiffPair(from: 1, to: 0)])
        #expect(diff.itemMoves == [DiffPair(from: ItemPath(section: 1, item: 0), to: ItemPath(section: 1, item: 0))])
        #expect(diff.itemUpdates == [DiffPair(from: ItemPath(section: 0, item: 0), to: ItemPath(section: 1, item: 1))])
        let stages = diff.stages()
        #expect(stages.count == 2)
        #expect(stages[0].sectionMoves == [DiffPair(from: 1, to: 0)])
        #expect(stages[0].sections == [old[1], old[0]])
        // Item 2 arrives at [1, 0], which shifts item 1: it is replaced (deleted at its path before the
        // stage, inserted at its path after it), not reloaded at a path that now names item 2.
        #expect(stages[1].sectionReloads == [0])
        #expect(stages[1].itemReloads.isEmpty)
        #expect(stages[1].itemDeletions == [ItemPath(section: 1, item: 0)])
        #expect(stages[1].itemInsertions == [ItemPath(section: 1, item: 0), ItemPath(section: 1, item: 1)])
        #expect(DiffCollectionViewDouble.violations(of: stages[0], from: old) == [])
        #expect(DiffCollectionViewDouble.violations(of: stages[1], from: stages[0].sections) == [])
        checkTwoValidStages(old, new)
    }

    @Test("An updated item ahead of every item arriving in its section is still reloaded in place")
    func updateAheadOfArrivalsIsReloaded() throws {
        // S2 moves up and loses item 3 to the end of S1, whose first item is updated.
        let old = [section(1, [1, 2]), section(2, [3])]
        var new = [section(2, []), section(1, [1, 2, 3])]
        new[1].items[0].value = 5
        let stages = SectionedDiff(from: old, to: new).stages()
        #expect(stages.count == 2)
        #expect(stages[1].itemInsertions == [ItemPath(section: 1, item: 2)])
        #expect(stages[1].itemReloads == [ItemPath(section: 1, item: 0)])
        #expect(stages[1].itemDeletions.isEmpty)
        checkTwoValidStages(old, new)
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

    @Test("Validator and collection view: a reload that an insertion in the same batch shifts is rejected")
    func rejectsReloadShiftedByInsertion() {
        // The stage the report showed: item 2 inserted at [1, 0] and item 1 reloaded at [1, 0], which
        // UIKit reads as a second insertion at [1, 0].
        let before = [section(2, [2]), section(1, [1])]
        var after = [section(2, []), section(1, [2, 1])]
        after[1].items[1].value = 5
        let stage = BatchStage(
            sectionReloads: [0], itemInsertions: [ItemPath(section: 1, item: 0)],
            itemReloads: [ItemPath(section: 1, item: 0)], sections: after)
        #expect(throws: DiffError.reloadOfChangedPosition(.itemReload, .item(ItemPath(section: 1, item: 0)))) {
            try stage.validate(from: before)
        }
        #expect(!DiffCollectionViewDouble.violations(of: stage, from: before).isEmpty)
    }

    @Test("Validator and collection view: a reload that a deletion in the same batch shifts is rejected")
    func rejectsReloadShiftedByDeletion() {
        // Item 1 deleted, item 2 reloaded at its old path [0, 1]: UIKit would refresh the cell at [0, 1]
        // after the batch, which shows item 3.
        let before = [section(1, [1, 2, 3])]
        var after = [section(1, [2, 3])]
        after[0].items[0].value = 5
        let stage = BatchStage(
            itemDeletions: [ItemPath(section: 0, item: 0)], itemReloads: [ItemPath(section: 0, item: 1)], sections: after)
        #expect(throws: DiffError.reloadOfChangedPosition(.itemReload, .item(ItemPath(section: 0, item: 1)))) {
            try stage.validate(from: before)
        }
        #expect(!DiffCollectionViewDouble.violations(of: stage, from: before).isEmpty)
    }

    @Test("Validator and collection view: a section reload that a section deletion in the same batch shifts is rejected")
    func rejectsSectionReloadShiftedByDeletion() {
        let before = [section(1, [1]), section(2, [2]), section(3, [3])]
        let after = [section(2, title: 1, [2]), section(3, [3])]
        let stage = BatchStage(sectionDeletions: [0], sectionReloads: [1], sections: after)
        #expect(throws: DiffError.reloadOfChangedPosition(.sectionReload, .section(1))) {
            try stage.validate(from: before)
        }
        #expect(!DiffCollectionViewDouble.violations(of: stage, from: before).isEmpty)
    }

    @Test("Validator and collection view: a reload ahead of the batch's insertions and deletions is accepted")
    func acceptsReloadAheadOfShifts() throws {
        let before = [section(1, [1, 2, 3])]
        var after = [section(1, [1, 9, 3])]
        after[0].items[0].value = 5
        let stage = BatchStage(
            itemDeletions: [ItemPath(section: 0, item: 1)], itemInsertions: [ItemPath(section: 0, item: 1)],
            itemReloads: [ItemPath(section: 0, item: 0)], sections: after)
        try stage.validate(from: before)
        #expect(DiffCollectionViewDouble.violations(of: stage, from: before) == [])
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
        // Section 2 moves up and receives item 2: it moves in stage 1 and is reloaded in stage 2, while
        // section 1 loses item 2 and moves item 3 in stage 1 and reloads item 3 in stage 2.
        #expect(table.calls == [
            "begin", "setSections", "insertSections", "moveSection", "deleteItems", "moveItem", "end",
            "begin", "setSections", "reloadSections", "reloadItems", "end",
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
