/// One batch of changes that a table or collection view can perform in one
/// `performBatchUpdates(_:completion:)`, with the sections its data source must hold afterwards.
///
/// A stage obeys the batch-update rules of `UITableView` and `UICollectionView`:
///
/// - deletions, move sources and reloads are positions in the data *before* the stage; insertions and
///   move destinations are positions in the data *after* it;
/// - no position is used twice (in the old data or in the new data);
/// - no item change touches a section that the stage deletes, inserts, moves or reloads (moving a
///   section and changing its items in one batch is what makes `UICollectionView` mis-animate or throw,
///   which is why ``SectionedDiff/stages()`` moves such a section in one stage and reloads it, with its
///   new items, in the next);
/// - a reloaded item or section is not also deleted or moved (an item can't be moved and reloaded in
///   one batch, which is why ``SectionedDiff/stages()`` reloads updated items in a later stage);
/// - a reloaded item or section keeps its position: the stage's other changes don't shift it (a table
///   or collection view performs a reload as a deletion and an insertion at the same position, so a
///   shifted reload collides with an insertion or refreshes the wrong cell);
/// - the unchanged elements, in order, exactly fill the positions the changes leave open.
///
/// ``validate(from:)`` checks all of them and that ``apply(to:)`` yields ``sections``.
///
/// A value: safe to use from any thread (`Sendable` when its type arguments are).
public struct BatchStage<Model: Diffable, Item: Diffable> {
    /// A section of the data.
    public typealias Section = DiffSection<Model, Item>

    /// Old indices of the sections to delete.
    public var sectionDeletions: [Int]
    /// New indices of the sections to insert.
    public var sectionInsertions: [Int]
    /// Sections to move, from old index to new index.
    public var sectionMoves: [DiffPair<Int>]
    /// Old indices of the sections to reload (model and items).
    public var sectionReloads: [Int]
    /// Old paths of the items to delete.
    public var itemDeletions: [ItemPath]
    /// New paths of the items to insert.
    public var itemInsertions: [ItemPath]
    /// Items to move, from old path to new path.
    public var itemMoves: [DiffPair<ItemPath>]
    /// Old paths of the items to reload.
    public var itemReloads: [ItemPath]
    /// The sections the data source holds after this stage: what the UI must show.
    public var sections: [Section]
    /// Whether this stage replaces all data: a UI should reload instead of animating. A reload stage
    /// deletes every old section and inserts every new one, so it is still a valid batch.
    public var isReload: Bool

    /// Creates a stage that leads to `sections`.
    public init(
        sectionDeletions: [Int] = [], sectionInsertions: [Int] = [], sectionMoves: [DiffPair<Int>] = [],
        sectionReloads: [Int] = [],
        itemDeletions: [ItemPath] = [], itemInsertions: [ItemPath] = [],
        itemMoves: [DiffPair<ItemPath>] = [], itemReloads: [ItemPath] = [],
        sections: [Section], isReload: Bool = false
    ) {
        self.sectionDeletions = sectionDeletions
        self.sectionInsertions = sectionInsertions
        self.sectionMoves = sectionMoves
        self.sectionReloads = sectionReloads
        self.itemDeletions = itemDeletions
        self.itemInsertions = itemInsertions
        self.itemMoves = itemMoves
        self.itemReloads = itemReloads
        self.sections = sections
        self.isReload = isReload
    }

    /// The number of operations in the stage.
    public var operationCount: Int {
        sectionDeletions.count + sectionInsertions.count + sectionMoves.count + sectionReloads.count
            + itemDeletions.count + itemInsertions.count + itemMoves.count + itemReloads.count
    }

    /// Performs the stage's operations on `before` the way a table view does, and returns the result.
    ///
    /// Removes deleted and moved-out sections and items, places inserted and moved-in ones, fills the
    /// open positions with the remaining ones in order, and replaces reloaded sections and items. New
    /// content (insertions, reloads) is taken from ``sections``, as a table view takes it from its data
    /// source. For the data before a stage of ``SectionedDiff/stages()``, the result equals ``sections``.
    /// O(n).
    ///
    /// Safe from any thread: a pure function of its inputs.
    ///
    /// - Parameter before: The sections before the stage (the previous stage's ``sections``, or the old
    ///   data for the first stage).
    /// - Returns: The sections after the stage.
    /// - Throws: ``DiffError`` when an operation breaks the batch-update rules or doesn't fit `before`.
    public func apply(to before: [Section]) throws(DiffError) -> [Section] {
        var changes = _SectionedChanges()
        changes.sectionDeletions = sectionDeletions
        changes.sectionInsertions = sectionInsertions
        changes.sectionMoves = sectionMoves
        changes.sectionReloads = sectionReloads
        changes.itemDeletions = itemDeletions
        changes.itemInsertions = itemInsertions
        changes.itemMoves = itemMoves
        changes.itemReloads = itemReloads
        changes.allowsItemChangesInMovedSections = false
        return try changes.apply(to: before, taking: sections)
    }

    /// Checks that the stage obeys the batch-update rules when performed on `before`, and that it yields
    /// ``sections``.
    ///
    /// Safe from any thread: a pure function of its inputs.
    ///
    /// - Parameter before: The sections before the stage.
    /// - Throws: ``DiffError`` naming the first rule broken; ``DiffError/dataMismatch(section:)`` when the
    ///   operations are valid but don't produce ``sections``.
    public func validate(from before: [Section]) throws(DiffError) {
        let result = try apply(to: before)
        guard result.count == sections.count else {
            throw .inconsistentCount(section: nil, expected: sections.count, actual: result.count)
        }
        if let section = result.indices.first(where: { result[$0] != sections[$0] }) {
            throw .dataMismatch(section: section)
        }
    }
}

extension BatchStage: Equatable {}
extension BatchStage: Sendable where Model: Sendable, Item: Sendable {}
