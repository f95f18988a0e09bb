extension SectionedDiff {
    /// Splits the changes into batches that a table or collection view can perform one after another.
    ///
    /// 1. Structure: section deletions, insertions and moves, item deletions, insertions and moves. Its
    ///    ``BatchStage/sections`` have the new structure with the *old* content of updated models and
    ///    items.
    /// 2. Content: reloads of updated sections and of updated items at their new positions (an item
    ///    can't be moved and reloaded in one batch). Items of a reloaded section are reloaded with it.
    ///
    /// A batch may not move a section and change items in it (``BatchStage``'s rules; DifferenceKit
    /// stages its changes apart for the same reason). When a moved section gains, loses or moves items,
    /// the structure stage splits in two, the one extra stage needed: first the sections (deletions,
    /// insertions, moves; every surviving section keeps its old items), then every item deletion,
    /// insertion and move, at the sections' new indices. So there are at most three stages.
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

        var stages: [BatchStage<Model, Item>] = []
        let hasSectionStructure = !(sections.deletions.isEmpty && sections.insertions.isEmpty
            && sections.moves.isEmpty)
        let hasItemStructure = !(itemDeletions.isEmpty && itemInsertions.isEmpty && itemMoves.isEmpty)
        if hasSectionStructure || hasItemStructure {
            // New structure, old content for what the last stage reloads.
            var interim = new
            for update in sections.updates { interim[update.to].model = old[update.from].model }
            for update in itemUpdates {
                interim[update.to.section].items[update.to.item] = old[update.from.section].items[update.from.item]
            }
            if hasItemStructure, let newOfOld = movedSectionsWithItemChanges() {
                // Stage 1: sections only. A surviving section keeps its old model and items.
                var sectionsOnly = interim
                for s in old.indices where newOfOld[s] >= 0 { sectionsOnly[newOfOld[s]] = old[s] }
                stages.append(BatchStage(
                    sectionDeletions: sections.deletions, sectionInsertions: sections.insertions,
                    sectionMoves: sections.moves, sections: sectionsOnly))
                // Stage 2: items, with old paths translated to the sections' new indices.
                func moved(_ path: ItemPath) -> ItemPath { ItemPath(section: newOfOld[path.section], item: path.item) }
                stages.append(BatchStage(
                    itemDeletions: itemDeletions.map(moved), itemInsertions: itemInsertions,
                    itemMoves: itemMoves.map { DiffPair(from: moved($0.from), to: $0.to) },
                    sections: interim))
            } else {
                stages.append(BatchStage(
                    sectionDeletions: sections.deletions, sectionInsertions: sections.insertions,
                    sectionMoves: sections.moves,
                    itemDeletions: itemDeletions, itemInsertions: itemInsertions, itemMoves: itemMoves,
                    sections: interim))
            }
        }
        if !(sections.updates.isEmpty && itemUpdates.isEmpty) {
            var reloadedSection = [Bool](repeating: false, count: new.count)
            for update in sections.updates { reloadedSection[update.to] = true }
            stages.append(BatchStage(
                sectionReloads: sections.updates.map(\.to),
                itemReloads: itemUpdates.lazy.map(\.to).filter { !reloadedSection[$0.section] },
                sections: new))
        }
        return stages
    }

    /// The new index of each old section (-1 when deleted) if some item deletion, insertion or move
    /// touches a moved section; nil when no item change does, so one structure stage is enough.
    private func movedSectionsWithItemChanges() -> [Int]? {
        guard !sections.moves.isEmpty else { return nil }
        var movedOld = [Bool](repeating: false, count: old.count)
        var movedNew = [Bool](repeating: false, count: new.count)
        for move in sections.moves {
            movedOld[move.from] = true
            movedNew[move.to] = true
        }
        let touches = itemDeletions.contains { movedOld[$0.section] }
            || itemInsertions.contains { movedNew[$0.section] }
            || itemMoves.contains { movedOld[$0.from.section] || movedNew[$0.to.section] }
        guard touches else { return nil }
        // Where each old section lands: deleted ones nowhere, the rest by the diff's section pairing,
        // which for a surviving section is its move destination or its place among the unmoved ones.
        var newOfOld = [Int](repeating: -1, count: old.count)
        var isDeleted = [Bool](repeating: false, count: old.count)
        for s in sections.deletions { isDeleted[s] = true }
        var taken = [Bool](repeating: false, count: new.count)
        for t in sections.insertions { taken[t] = true }
        for move in sections.moves {
            newOfOld[move.from] = move.to
            taken[move.to] = true
        }
        var t = 0
        for s in old.indices where !isDeleted[s] && !movedOld[s] {
            while taken[t] { t += 1 }
            newOfOld[s] = t
            t += 1
        }
        return newOfOld
    }
}
