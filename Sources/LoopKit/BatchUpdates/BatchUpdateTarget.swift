/// A view that performs batch updates: the table or collection view side of ``BatchStage``.
///
/// Conform a `UITableView` or `UICollectionView` wrapper (or a test double) and call ``commit(_:)``
/// with ``SectionedDiff/stages()``. Each method mirrors the UIKit call of the same name. A target bound
/// to the main actor can conform with an isolated conformance (`extension Table: @MainActor
/// BatchUpdateTarget`).
///
/// ```swift
/// let diff = SectionedDiff(from: dataSource.sections, to: newSections)
/// tableTarget.commit(diff.stages())
/// ```
///
/// ``SectionedDataSource/commit(_:to:)`` drives a target on its loop's thread; each requirement is
/// called on the thread that commits, and only there.
public protocol BatchUpdateTarget {
    /// The section model type.
    associatedtype Model: Diffable
    /// The item type.
    associatedtype Item: Diffable

    /// Runs `updates` as one animated batch (`performBatchUpdates(_:completion:)`).
    ///
    /// Called on the thread that commits.
    func performBatchUpdates(_ updates: () -> Void)
    /// Replaces all data and redraws without animation (`reloadData()`).
    ///
    /// Called on the thread that commits.
    func reloadData(_ sections: [DiffSection<Model, Item>])
    /// Replaces the data source's sections; called first inside each batch.
    ///
    /// Called on the thread that commits.
    func setSections(_ sections: [DiffSection<Model, Item>])
    /// Deletes the sections at these old indices.
    ///
    /// Called on the thread that commits.
    func deleteSections(_ sections: [Int])
    /// Inserts sections at these new indices.
    ///
    /// Called on the thread that commits.
    func insertSections(_ sections: [Int])
    /// Moves the section at an old index to a new index.
    ///
    /// Called on the thread that commits.
    func moveSection(_ section: Int, toSection newSection: Int)
    /// Reloads the sections at these old indices.
    ///
    /// Called on the thread that commits.
    func reloadSections(_ sections: [Int])
    /// Deletes the items at these old paths.
    ///
    /// Called on the thread that commits.
    func deleteItems(at paths: [ItemPath])
    /// Inserts items at these new paths.
    ///
    /// Called on the thread that commits.
    func insertItems(at paths: [ItemPath])
    /// Moves the item at an old path to a new path.
    ///
    /// Called on the thread that commits.
    func moveItem(at path: ItemPath, to newPath: ItemPath)
    /// Reloads the items at these old paths.
    ///
    /// Called on the thread that commits.
    func reloadItems(at paths: [ItemPath])
}

extension BatchUpdateTarget {
    /// Performs `stages` in order, one batch per stage.
    ///
    /// Each batch sets the stage's sections on the data source, then issues its operations: deletions,
    /// insertions, moves, reloads. A reload stage calls ``reloadData(_:)`` instead.
    ///
    /// Call on the thread the target belongs to (for UIKit: the main thread, on the main actor).
    public func commit(_ stages: [BatchStage<Model, Item>]) {
        for stage in stages { perform(stage) }
    }

    /// Performs one stage as one batch: sets its sections inside the batch, then issues its operations.
    ///
    /// Inside ``performBatchUpdates(_:)`` the target gets ``setSections(_:)`` first, then deletions,
    /// insertions and moves of sections, reloads of sections, then the same for items. A reload stage
    /// (``BatchStage/isReload``) calls ``reloadData(_:)`` instead.
    ///
    /// Call on the thread the target belongs to (for UIKit: the main thread, on the main actor).
    public func perform(_ stage: BatchStage<Model, Item>) {
        perform(stage, updatingData: {})
    }

    /// Performs one stage, running `updatingData` first inside the batch (before ``setSections(_:)``),
    /// so that a data source's own model changes inside the batch too.
    func perform(_ stage: BatchStage<Model, Item>, updatingData: () -> Void) {
        if stage.isReload {
            updatingData()
            reloadData(stage.sections)
            return
        }
        performBatchUpdates {
            updatingData()
            setSections(stage.sections)
            if !stage.sectionDeletions.isEmpty { deleteSections(stage.sectionDeletions) }
            if !stage.sectionInsertions.isEmpty { insertSections(stage.sectionInsertions) }
            for move in stage.sectionMoves { moveSection(move.from, toSection: move.to) }
            if !stage.sectionReloads.isEmpty { reloadSections(stage.sectionReloads) }
            if !stage.itemDeletions.isEmpty { deleteItems(at: stage.itemDeletions) }
            if !stage.itemInsertions.isEmpty { insertItems(at: stage.itemInsertions) }
            for move in stage.itemMoves { moveItem(at: move.from, to: move.to) }
            if !stage.itemReloads.isEmpty { reloadItems(at: stage.itemReloads) }
        }
    }
}
