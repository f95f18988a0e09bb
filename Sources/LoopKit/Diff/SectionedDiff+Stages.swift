extension SectionedDiff {
    /// Splits the changes into batches that a table or collection view can perform one after another.
    ///
    /// 1. Structure: section deletions, insertions and moves, item deletions, insertions and moves. Its
    ///    ``BatchStage/sections`` have the new structure with the *old* content of updated models and
    ///    items.
    /// 2. Content: reloads of updated sections and of updated items at their new positions (an item
    ///    can't be moved and reloaded in one batch). Items of a reloaded section are reloaded with it.
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
        let hasStructure = !(sections.deletions.isEmpty && sections.insertions.isEmpty && sections.moves.isEmpty
            && itemDeletions.isEmpty && itemInsertions.isEmpty && itemMoves.isEmpty)
        if hasStructure {
            // New structure, old content for what the second stage reloads.
            var interim = new
            for update in sections.updates { interim[update.to].model = old[update.from].model }
            for update in itemUpdates {
                interim[update.to.section].items[update.to.item] = old[update.from.section].items[update.from.item]
            }
            stages.append(BatchStage(
                sectionDeletions: sections.deletions, sectionInsertions: sections.insertions,
                sectionMoves: sections.moves,
                itemDeletions: itemDeletions, itemInsertions: itemInsertions, itemMoves: itemMoves,
                sections: interim))
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
}
