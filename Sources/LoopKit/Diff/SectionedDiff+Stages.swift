extension SectionedDiff {
    /// Splits the changes into batches that a table or collection view can perform one after another:
    /// at most two, for every input.
    ///
    /// 1. Structure: section deletions, insertions and moves, and item deletions, insertions and moves.
    ///    Its ``BatchStage/sections`` have the new structure with the *old* content of updated models
    ///    and items.
    /// 2. Content: reloads of updated sections and of updated items at their positions after stage 1
    ///    (an item can't be moved and reloaded in one batch). Items of a reloaded section are reloaded
    ///    with it. Also the reloads and insertions that stand in for item changes in moved sections,
    ///    below.
    ///
    /// A batch may neither change items in a section it moves nor reload a section it moves
    /// (``BatchStage``'s rules; DifferenceKit stages its changes apart for the same reason). So a section
    /// that moves and gains, loses or moves items, whether or not its model changed, moves in stage 1
    /// with its old model and items, and stage 2 reloads it: the reload brings its new model and items,
    /// so its item changes are not listed. An item that moves between such a section and another one is
    /// deleted from the other one in stage 1, or inserted into it in stage 2 (or brought by the other
    /// one's reload), so it is never shown twice. Every other item change keeps its own animation.
    ///
    /// A reload names one position for both sides of its batch (`UICollectionView` performs it as a
    /// deletion and an insertion at that path), so no stage reloads an item or section that the same
    /// stage's other changes shift. Stage 2 shifts only the items behind an item inserted there; an
    /// updated item behind one is deleted at its stage-1 path and inserted at its new path instead of
    /// reloaded.
    ///
    /// Empty stages are left out: no changes give no stages. A reload (``isReload``) is one stage that
    /// deletes every section and inserts every new one, marked ``BatchStage/isReload``. Each stage passes
    /// ``BatchStage/validate(from:)`` against the previous stage's sections (``old`` for the first), and
    /// the last stage's sections are ``new``. O(n).
    ///
    /// Safe from any thread: a pure function of the diff.
    ///
    /// - Returns: The stages in the order to perform them.
    public func stages() -> [BatchStage<Model, Item>] {
        if isReload {
            return [BatchStage(
                sectionDeletions: Array(old.indices), sectionInsertions: Array(new.indices),
                sections: new, isReload: true)]
        }
        if isEmpty { return [] }

        let newOfOld = newSectionIndices()
        // Stage 2 reloads the updated sections and the moved sections whose items change ("taken whole").
        var reloaded = [Bool](repeating: false, count: new.count)
        for update in sections.updates { reloaded[update.to] = true }
        var takenWhole = [Bool](repeating: false, count: new.count)
        var oldOfTakenWhole: [Int: Int] = [:]
        if !sections.moves.isEmpty {
            var movedFrom = [Int](repeating: -1, count: new.count)
            for move in sections.moves { movedFrom[move.to] = move.from }
            func touch(_ t: Int) {
                guard movedFrom[t] >= 0, !takenWhole[t] else { return }
                takenWhole[t] = true
                reloaded[t] = true
                oldOfTakenWhole[t] = movedFrom[t]
            }
            for path in itemDeletions { touch(newOfOld[path.section]) }
            for path in itemInsertions { touch(path.section) }
            for move in itemMoves {
                touch(newOfOld[move.from.section])
                touch(move.to.section)
            }
        }

        // Items that arrive late: moved out of a section taken whole into one that isn't, they are
        // inserted in stage 2 (or come with their section's reload), so they are never shown twice.
        var arrivesLate = [[Bool]](repeating: [], count: new.count)
        var lateInsertions: [ItemPath] = []
        for move in itemMoves where takenWhole[newOfOld[move.from.section]] && !takenWhole[move.to.section] {
            let t = move.to.section
            if arrivesLate[t].isEmpty { arrivesLate[t] = [Bool](repeating: false, count: new[t].items.count) }
            arrivesLate[t][move.to.item] = true
            if !reloaded[t] { lateInsertions.append(move.to) }
        }
        // Where each new item sits in stage 1's sections, which lack the late arrivals.
        var interimItem = [[Int]](repeating: [], count: new.count)
        for t in new.indices where !arrivesLate[t].isEmpty {
            var k = 0
            interimItem[t] = arrivesLate[t].map { isLate in
                defer { if !isLate { k += 1 } }
                return k
            }
        }
        func interimPath(_ path: ItemPath) -> ItemPath {
            let at = interimItem[path.section]
            return at.isEmpty ? path : ItemPath(section: path.section, item: at[path.item])
        }

        // Stage 1's item changes: none in a section taken whole; a move out of one that isn't into one
        // that is becomes a deletion.
        var firstDeletions: [ItemPath] = []
        var firstInsertions: [ItemPath] = []
        var firstMoves: [DiffPair<ItemPath>] = []
        for path in itemDeletions where !takenWhole[newOfOld[path.section]] { firstDeletions.append(path) }
        for path in itemInsertions where !takenWhole[path.section] { firstInsertions.append(interimPath(path)) }
        for move in itemMoves where !takenWhole[newOfOld[move.from.section]] {
            if takenWhole[move.to.section] {
                firstDeletions.append(move.from)
            } else {
                firstMoves.append(DiffPair(from: move.from, to: interimPath(move.to)))
            }
        }
        firstDeletions.sort()

        // Stage 1's sections: the new structure, with old models and items where stage 2 takes a section
        // whole, the old content of updated models and items, and without the items that arrive late.
        var interim = new
        for (t, s) in oldOfTakenWhole { interim[t] = old[s] }
        for update in sections.updates where !takenWhole[update.to] {
            interim[update.to].model = old[update.from].model
        }
        for update in itemUpdates where !takenWhole[update.to.section] {
            interim[update.to.section].items[update.to.item] = old[update.from.section].items[update.from.item]
        }
        for t in new.indices where !arrivesLate[t].isEmpty {
            interim[t].items = zip(interim[t].items, arrivesLate[t]).filter { !$0.1 }.map(\.0)
        }

        var stages: [BatchStage<Model, Item>] = []
        if !(sections.deletions.isEmpty && sections.insertions.isEmpty && sections.moves.isEmpty
            && firstDeletions.isEmpty && firstInsertions.isEmpty && firstMoves.isEmpty) {
            stages.append(BatchStage(
                sectionDeletions: sections.deletions, sectionInsertions: sections.insertions,
                sectionMoves: sections.moves,
                itemDeletions: firstDeletions, itemInsertions: firstInsertions, itemMoves: firstMoves,
                sections: interim))
        }
        // An updated item that arrives late comes with new content. The others reload where they are,
        // unless a late arrival lands ahead of them: stage 2 shifts them, and a reload names one path
        // for both sides of its batch, so they are replaced (deleted and inserted) instead.
        var itemReloads: [ItemPath] = []
        var replacedDeletions: [ItemPath] = []
        var secondInsertions = lateInsertions
        for update in itemUpdates where !reloaded[update.to.section] && !takenWhole[newOfOld[update.from.section]] {
            let at = interimPath(update.to)
            if at == update.to {
                itemReloads.append(at)
            } else {
                replacedDeletions.append(at)
                secondInsertions.append(update.to)
            }
        }
        secondInsertions.sort()
        let sectionReloads = new.indices.filter { reloaded[$0] }
        if !(sectionReloads.isEmpty && itemReloads.isEmpty && secondInsertions.isEmpty) {
            stages.append(BatchStage(
                sectionReloads: sectionReloads, itemDeletions: replacedDeletions, itemInsertions: secondInsertions,
                itemReloads: itemReloads, sections: new))
        }
        return stages
    }

    /// The new index of each old section (-1 when deleted): its move destination, or its place among
    /// the sections that are neither inserted nor moved.
    private func newSectionIndices() -> [Int] {
        var newOfOld = [Int](repeating: -1, count: old.count)
        var stays = [Bool](repeating: true, count: old.count)
        for s in sections.deletions { stays[s] = false }
        var taken = [Bool](repeating: false, count: new.count)
        for t in sections.insertions { taken[t] = true }
        for move in sections.moves {
            newOfOld[move.from] = move.to
            stays[move.from] = false
            taken[move.to] = true
        }
        var t = 0
        for s in old.indices where stays[s] {
            while taken[t] { t += 1 }
            newOfOld[s] = t
            t += 1
        }
        return newOfOld
    }
}
