import LoopKit
import Testing

@Suite("Diff")
struct DiffTests {
    // MARK: Properties over random data

    @Test("apply(to: old) yields new for random edits with moves, updates and duplicates")
    func applyYieldsNew() throws {
        var rng = DiffTestRNG(seed: 0xD1FF)
        for _ in 0..<2_000 {
            let (old, new) = diffRandomRows(&rng)
            let diff = Diff(from: old, to: new)
            #expect(try diff.apply(to: old) == new, "old: \(old) new: \(new)")
        }
    }

    @Test("The CollectionDifference round trip: old.applying(diff.collectionDifference) == new")
    func collectionDifferenceRoundTrip() throws {
        var rng = DiffTestRNG(seed: 0xC011)
        for _ in 0..<1_000 {
            let (old, new) = diffRandomRows(&rng)
            let diff = Diff(from: old, to: new)
            let difference = diff.collectionDifference
            #expect(old.applying(difference) == new, "old: \(old) new: \(new)")
            let back = try Diff(difference, oldCount: old.count)
            #expect(try back.apply(to: old) == new)
            #expect(back.moves == diff.moves)
            let movedTo = Set(diff.moves.map(\.to))
            #expect(back.updates == diff.updates.filter { movedTo.contains($0.to) })
        }
    }

    @Test("Moves are minimal: paired elements minus a longest increasing run")
    func movesAreMinimal() {
        var rng = DiffTestRNG(seed: 0x30FE)
        for _ in 0..<1_000 {
            let (old, new) = diffRandomRows(&rng, maxCount: 30)
            let diff = Diff(from: old, to: new)
            #expect(diff.moves.count == diffBruteForceMoveCount(old, new), "old: \(old) new: \(new)")
        }
    }

    @Test("Duplicates list exactly the identifiers repeated in old or new, each once")
    func duplicatesMatchBruteForce() {
        var rng = DiffTestRNG(seed: 0xD0B1)
        for _ in 0..<1_000 {
            let (old, new) = diffRandomRows(&rng, duplicatePercent: 25)
            let diff = Diff(from: old, to: new)
            #expect(Set(diff.duplicates) == diffBruteForceDuplicates(old.map(\.id), new.map(\.id)))
            #expect(Set(diff.duplicates).count == diff.duplicates.count)
        }
    }

    @Test("Changes are well formed: sorted offsets, updates pair equal identities with unequal content")
    func changesAreWellFormed() {
        var rng = DiffTestRNG(seed: 0x0DE5)
        for _ in 0..<1_000 {
            let (old, new) = diffRandomRows(&rng)
            let diff = Diff(from: old, to: new)
            #expect(diff.deletions == diff.deletions.sorted())
            #expect(diff.insertions == diff.insertions.sorted())
            #expect(diff.moves.map(\.to) == diff.moves.map(\.to).sorted())
            for update in diff.updates {
                #expect(old[update.from].id == new[update.to].id)
                #expect(old[update.from] != new[update.to])
            }
            for move in diff.moves { #expect(old[move.from].id == new[move.to].id) }
            #expect(diff.isEmpty == (old == new))
        }
    }

    @Test("Large inputs (a partitioned symbol table) pair, report duplicates and apply correctly")
    func largeInputs() throws {
        var rng = DiffTestRNG(seed: 0x1A26E)
        for round in 0..<3 {
            let count = 40_000
            let old = (0..<count).map { DiffRow(id: round == 2 ? rng.int(0..<(count / 2)) : $0, value: 0) }
            var new = old.filter { _ in !rng.chance(10) }
            for _ in 0..<2_000 {
                let row = new.remove(at: rng.int(0..<new.count))
                new.insert(row, at: rng.int(0..<(new.count + 1)))
            }
            for _ in 0..<4_000 { new.insert(DiffRow(id: count + rng.int(0..<count), value: 1), at: rng.int(0..<(new.count + 1))) }
            for _ in 0..<500 { new[rng.int(0..<new.count)].value = 2 }
            let diff = Diff(from: old, to: new)
            #expect(try diff.apply(to: old) == new)
            #expect(old.applying(diff.collectionDifference) == new)
            #expect(Set(diff.duplicates) == diffBruteForceDuplicates(old.map(\.id), new.map(\.id)))
        }
    }

    @Test("Many colliding hashes still pair by identity")
    func manyCollidingHashes() throws {
        let old = (0..<300).map { DiffCollidingHash(name: "\($0)") }
        let new = Array(old.reversed().dropFirst(10)) + [DiffCollidingHash(name: "x"), DiffCollidingHash(name: "0")]
        let diff = Diff(from: old, to: new)
        #expect(diff.duplicates == [DiffCollidingHash(name: "0")])
        #expect(try diff.apply(to: old) == new)
    }

    // MARK: Examples

    @Test("Pure insertions are insertions at new offsets, nothing else")
    func pureInsertions() throws {
        let diff = Diff(from: [1, 2, 3], to: [0, 1, 2, 9, 3, 4])
        #expect(diff.insertions == [0, 3, 5])
        #expect(diff.deletions.isEmpty && diff.moves.isEmpty && diff.updates.isEmpty)
        #expect(try diff.apply(to: [1, 2, 3]) == [0, 1, 2, 9, 3, 4])
    }

    @Test("Pure deletions are deletions at old offsets, nothing else")
    func pureDeletions() throws {
        let diff = Diff(from: ["a", "b", "c", "d", "e"], to: ["b", "d"])
        #expect(diff.deletions == [0, 2, 4])
        #expect(diff.insertions.isEmpty && diff.moves.isEmpty && diff.updates.isEmpty)
    }

    @Test("A single move is one move, not a shift of every element in between")
    func singleMoveIsOneMove() throws {
        let old = Array(0..<100)
        var new = old
        new.insert(new.remove(at: 90), at: 3)
        let diff = Diff(from: old, to: new)
        #expect(diff.moves == [DiffPair(from: 90, to: 3)])
        #expect(diff.changeCount == 1)
        #expect(try diff.apply(to: old) == new)
    }

    @Test("Elements that only shift because of insertions and deletions are not moves")
    func shiftsAreNotMoves() {
        let diff = Diff(from: [1, 2, 3, 4, 5], to: [0, 1, 3, 4, 6, 5])
        #expect(diff.moves.isEmpty)
        #expect(diff.deletions == [1])
        #expect(diff.insertions == [0, 4])
    }

    @Test("Same identity with changed content is an update; a changed position is a move")
    func updateVersusMove() throws {
        let old = [DiffRow(id: 1, value: 0), DiffRow(id: 2, value: 0), DiffRow(id: 3, value: 0)]
        let updatedOnly = [DiffRow(id: 1, value: 0), DiffRow(id: 2, value: 7), DiffRow(id: 3, value: 0)]
        let diff = Diff(from: old, to: updatedOnly)
        #expect(diff.updates == [DiffPair(from: 1, to: 1)])
        #expect(diff.moves.isEmpty && diff.deletions.isEmpty && diff.insertions.isEmpty)

        let movedAndUpdated = [DiffRow(id: 3, value: 5), DiffRow(id: 1, value: 0), DiffRow(id: 2, value: 0)]
        let both = Diff(from: old, to: movedAndUpdated)
        #expect(both.moves == [DiffPair(from: 2, to: 0)])
        #expect(both.updates == [DiffPair(from: 2, to: 0)])
        #expect(try both.apply(to: old) == movedAndUpdated)
    }

    @Test("Repeated identifiers pair in order, extras are deletions or insertions, and are reported")
    func duplicatesPairInOrder() throws {
        let old = ["x", "a", "x", "b"]
        let new = ["x", "b", "x", "x"]
        let diff = Diff(from: old, to: new)
        #expect(diff.duplicates == ["x"])
        #expect(diff.deletions == [1])  // "a"
        #expect(diff.insertions == [3])  // the third "x"
        #expect(try diff.apply(to: old) == new)

        let newOnly = Diff(from: ["a"], to: ["z", "a", "z"])
        #expect(newOnly.duplicates == ["z"])
        #expect(newOnly.insertions == [0, 2])
    }

    @Test("Identity comes from ==, not the hash: colliding hashes still pair correctly")
    func hashCollisionsDoNotMismatch() throws {
        let old = ["a", "b", "c", "d"].map(DiffCollidingHash.init(name:))
        let new = ["d", "b", "e", "a"].map(DiffCollidingHash.init(name:))
        let diff = Diff(from: old, to: new)
        #expect(diff.deletions == [2])  // "c"
        #expect(diff.insertions == [2])  // "e"
        #expect(diff.duplicates.isEmpty)
        #expect(diff.moves.count == 2)
        #expect(try diff.apply(to: old) == new)
    }

    @Test("A Hashable type that declares Diffable uses itself as identity")
    func hashableUsesItselfAsIdentity() {
        struct Tag: Hashable, Diffable { var name: String }
        let tag = Tag(name: "t")
        #expect(tag.diffID == tag)
        let diff = Diff(from: [Tag(name: "a")], to: [Tag(name: "b")])
        #expect(diff.deletions == [0] && diff.insertions == [0] && diff.updates.isEmpty)
    }

    @Test("Above the reload threshold the diff is a reload that still applies")
    func reloadThreshold() throws {
        let old = Array(0..<10)
        let new = Array(5..<15)
        let below = Diff(from: old, to: new, reloadThreshold: 10)
        #expect(!below.isReload)
        #expect(below.changeCount == 10)
        let above = Diff(from: old, to: new, reloadThreshold: 9)
        #expect(above.isReload)
        #expect(above.deletions == Array(0..<10) && above.insertions == Array(0..<10))
        #expect(above.moves.isEmpty && above.updates.isEmpty)
        #expect(try above.apply(to: old) == new)
        #expect(old.applying(above.collectionDifference) == new)
        #expect(!Diff(from: old, to: old, reloadThreshold: 0).isReload)
    }

    @Test("Applying to data of the wrong count throws countMismatch")
    func applyRejectsWrongCount() {
        let diff = Diff(from: [1, 2, 3], to: [3, 2, 1])
        #expect(throws: DiffError.countMismatch(expected: 3, actual: 2)) { try diff.apply(to: [1, 2]) }
    }

    @Test("A CollectionDifference that doesn't fit the old count throws")
    func collectionDifferenceOutOfRange() {
        let difference = [1, 2, 3].difference(from: [1, 2, 3, 4, 5])
        #expect(throws: DiffError.self) { try Diff(difference, oldCount: 2) }
        #expect(throws: DiffError.self) { try Diff(difference, oldCount: 4) }
    }

    @Test("Errors describe themselves as sentences")
    func errorDescriptions() {
        #expect(DiffError.countMismatch(expected: 3, actual: 2).description
            == "The changes were computed for 3 elements, but the data has 2.")
        #expect(DiffError.outOfRange(.itemInsertion, .item(ItemPath(section: 1, item: 2))).description
            == "An item insertion names item [1, 2], which is out of range.")
    }

    @Test("Empty inputs give an empty diff")
    func emptyInputs() throws {
        let diff = Diff<Int>(from: [], to: [])
        #expect(diff.isEmpty)
        #expect(try diff.apply(to: []) == [])
    }
}

extension DiffTests {
    @Test("Moves and updates are one pair type, in flat and sectioned diffs")
    func movesAndUpdatesShareOnePairType() {
        let diff = Diff(from: [1, 2, 3], to: [3, 1, 2])
        let moves: [DiffPair<Int>] = diff.moves
        let updates: [DiffPair<Int>] = diff.updates
        #expect(moves == [DiffPair(from: 2, to: 0)])
        #expect(updates.isEmpty)
        let sectioned = SectionedDiff<DiffHeader, DiffRow>(from: [], to: [])
        let itemMoves: [DiffPair<ItemPath>] = sectioned.itemMoves
        let itemUpdates: [DiffPair<ItemPath>] = sectioned.itemUpdates
        #expect(itemMoves.isEmpty && itemUpdates.isEmpty)
    }
}
