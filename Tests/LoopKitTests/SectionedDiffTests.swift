import LoopKit
import Testing

@Suite("SectionedDiff")
struct SectionedDiffTests {
    func section(_ id: Int, title: Int = 0, _ items: [Int], value: Int = 0) -> DiffRowSection {
        DiffRowSection(DiffHeader(id: id, title: title), items: items.map { DiffRow(id: $0, value: value) })
    }

    // MARK: Properties over random data

    @Test("apply(to: old) yields new for random section and item edits")
    func applyYieldsNew() throws {
        var rng = DiffTestRNG(seed: 0x5EC7)
        for _ in 0..<2_000 {
            let (old, new) = diffRandomSections(&rng)
            let diff = SectionedDiff(from: old, to: new)
            #expect(try diff.apply(to: old) == new, "old: \(old) new: \(new)")
        }
    }

    @Test("Item changes never touch deleted or inserted sections, and paths are in range")
    func itemChangesAvoidDeadSections() {
        var rng = DiffTestRNG(seed: 0xDEAD)
        for _ in 0..<1_000 {
            let (old, new) = diffRandomSections(&rng)
            let diff = SectionedDiff(from: old, to: new)
            let deleted = Set(diff.sections.deletions)
            let inserted = Set(diff.sections.insertions)
            for path in diff.itemDeletions + diff.itemMoves.map(\.from) + diff.itemUpdates.map(\.from) {
                #expect(!deleted.contains(path.section))
                #expect(path.item < old[path.section].items.count)
            }
            for path in diff.itemInsertions + diff.itemMoves.map(\.to) + diff.itemUpdates.map(\.to) {
                #expect(!inserted.contains(path.section))
                #expect(path.item < new[path.section].items.count)
            }
            for move in diff.itemMoves {
                #expect(old[move.from.section].items[move.from.item].id == new[move.to.section].items[move.to.item].id)
            }
        }
    }

    @Test("Duplicates list the section and item identifiers repeated in old or new")
    func duplicatesMatchBruteForce() {
        var rng = DiffTestRNG(seed: 0xD0B2)
        for _ in 0..<1_000 {
            let (old, new) = diffRandomSections(&rng, duplicatePercent: 20)
            let diff = SectionedDiff(from: old, to: new)
            #expect(Set(diff.itemDuplicates) == diffBruteForceDuplicates(
                old.flatMap(\.items).map(\.id), new.flatMap(\.items).map(\.id)))
            #expect(Set(diff.sections.duplicates) == diffBruteForceDuplicates(
                old.map(\.model.id), new.map(\.model.id)))
        }
    }

    // MARK: Examples

    @Test("An item that moves to another section is one move, not a deletion and an insertion")
    func crossSectionMove() throws {
        let old = [section(1, [1, 2, 3]), section(2, [4, 5])]
        let new = [section(1, [1, 3]), section(2, [4, 2, 5])]
        let diff = SectionedDiff(from: old, to: new)
        #expect(diff.itemMoves == [DiffPair(from: ItemPath(section: 0, item: 1), to: ItemPath(section: 1, item: 1))])
        #expect(diff.itemDeletions.isEmpty && diff.itemInsertions.isEmpty && diff.itemUpdates.isEmpty)
        #expect(diff.sections.isEmpty)
        #expect(try diff.apply(to: old) == new)
    }

    @Test("A moved section is one section move; its items don't move")
    func sectionMove() throws {
        let old = [section(1, [1, 2]), section(2, [3]), section(3, [4, 5])]
        let new = [section(3, [4, 5]), section(1, [1, 2]), section(2, [3])]
        let diff = SectionedDiff(from: old, to: new)
        #expect(diff.sections.moves == [DiffPair(from: 2, to: 0)])
        #expect(diff.changeCount == 1)
        #expect(try diff.apply(to: old) == new)
    }

    @Test("Section insertions and deletions carry their items; no item changes for them")
    func sectionInsertAndDelete() throws {
        let old = [section(1, [1, 2]), section(2, [3])]
        let new = [section(2, [3]), section(4, [7, 8])]
        let diff = SectionedDiff(from: old, to: new)
        #expect(diff.sections.deletions == [0])
        #expect(diff.sections.insertions == [1])
        #expect(diff.itemDeletions.isEmpty && diff.itemInsertions.isEmpty && diff.itemMoves.isEmpty)
        #expect(try diff.apply(to: old) == new)
    }

    @Test("An item leaving a deleted section for a surviving one is an insertion")
    func itemOutOfDeletedSection() throws {
        let old = [section(1, [1, 2]), section(2, [3])]
        let new = [section(2, [3, 2])]
        let diff = SectionedDiff(from: old, to: new)
        #expect(diff.sections.deletions == [0])
        #expect(diff.itemInsertions == [ItemPath(section: 0, item: 1)])
        #expect(diff.itemMoves.isEmpty)
        #expect(try diff.apply(to: old) == new)
    }

    @Test("A changed section model with the same identity is a section update")
    func sectionUpdate() throws {
        let old = [section(1, title: 0, [1]), section(2, [2])]
        let new = [section(1, title: 9, [1]), section(2, [2])]
        let diff = SectionedDiff(from: old, to: new)
        #expect(diff.sections.updates == [DiffPair(from: 0, to: 0)])
        #expect(diff.changeCount == 1)
        #expect(try diff.apply(to: old) == new)
    }

    @Test("A changed item with the same identity is an item update, also when it moved")
    func itemUpdate() throws {
        let old = [section(1, [1, 2, 3])]
        var new = [section(1, [3, 1, 2])]
        new[0].items[0].value = 4
        let diff = SectionedDiff(from: old, to: new)
        let path = DiffPair(from: ItemPath(section: 0, item: 2), to: ItemPath(section: 0, item: 0))
        #expect(diff.itemMoves == [path])
        #expect(diff.itemUpdates == [DiffPair(from: path.from, to: path.to)])
        #expect(try diff.apply(to: old) == new)
    }

    @Test("Repeated section and item identifiers are reported and handled")
    func duplicatesReported() throws {
        let old = [section(1, [1, 1, 2]), section(1, [3])]
        let new = [section(1, [1, 2]), section(1, [3, 1, 1])]
        let diff = SectionedDiff(from: old, to: new)
        #expect(diff.sections.duplicates == [DiffHeader(id: 1, title: 0).id])
        #expect(diff.itemDuplicates == [1])
        #expect(try diff.apply(to: old) == new)
    }

    @Test("Above the reload threshold the sectioned diff is a reload")
    func reloadThreshold() throws {
        let old = [section(1, [1, 2, 3])]
        let new = [section(1, [3, 2, 1, 4])]
        let exact = SectionedDiff(from: old, to: new).changeCount
        #expect(!SectionedDiff(from: old, to: new, reloadThreshold: exact).isReload)
        let reload = SectionedDiff(from: old, to: new, reloadThreshold: exact - 1)
        #expect(reload.isReload)
        #expect(try reload.apply(to: old) == new)
    }

    @Test("Applying to sections of the wrong shape throws")
    func applyRejectsWrongShape() {
        let old = [section(1, [1, 2]), section(2, [3])]
        let new = [section(2, [3]), section(1, [2, 1])]
        let diff = SectionedDiff(from: old, to: new)
        #expect(throws: DiffError.countMismatch(expected: 2, actual: 1)) { try diff.apply(to: [old[0]]) }
        #expect(throws: DiffError.self) { try diff.apply(to: [section(1, [1, 2, 9]), section(2, [3])]) }
    }
}
