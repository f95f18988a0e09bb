/// Why changes could not be applied, or why a batch stage breaks the batch-update rules.
///
/// Thrown by ``Diff/apply(to:)``, ``SectionedDiff/apply(to:)``, ``BatchStage/apply(to:)``,
/// ``BatchStage/validate(from:)`` and ``Diff/init(_:oldCount:)``. Each case names the operation and the
/// position at fault; ``description`` reads as a sentence.
///
/// A value: safe to use from any thread.
public enum DiffError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The kind of change an error is about.
    ///
    /// A value: safe to use from any thread.
    public enum Operation: String, Hashable, Sendable {
        /// A deletion from flat data.
        case deletion
        /// An insertion into flat data.
        case insertion
        /// A move within flat data.
        case move
        /// An update in flat data.
        case update
        /// A section deletion.
        case sectionDeletion = "section deletion"
        /// A section insertion.
        case sectionInsertion = "section insertion"
        /// A section move.
        case sectionMove = "section move"
        /// A section update (its model changed).
        case sectionUpdate = "section update"
        /// A section reload in a batch stage.
        case sectionReload = "section reload"
        /// An item deletion.
        case itemDeletion = "item deletion"
        /// An item insertion.
        case itemInsertion = "item insertion"
        /// An item move.
        case itemMove = "item move"
        /// An item update.
        case itemUpdate = "item update"
        /// An item reload in a batch stage.
        case itemReload = "item reload"

        /// "a deletion", "an item move": the name with its indefinite article, capitalised.
        var withArticle: String {
            let name = rawValue
            return (name.first.map { "aeiou".contains($0) } ?? false ? "An " : "A ") + name
        }
    }

    /// A position named by a change: an offset, a section index or an item path.
    ///
    /// A value: safe to use from any thread.
    public enum Position: Hashable, Sendable, CustomStringConvertible {
        /// An offset in flat data.
        case index(Int)
        /// A section index.
        case section(Int)
        /// An item path in sectioned data.
        case item(ItemPath)

        /// The position in words, such as "item [1, 2]".
        public var description: String {
            switch self {
            case .index(let i): "index \(i)"
            case .section(let s): "section \(s)"
            case .item(let p): "item \(p)"
            }
        }
    }

    /// The data has `actual` elements (or sections) but the changes were computed for `expected`.
    case countMismatch(expected: Int, actual: Int)
    /// A change names a position outside the data it refers to (old data for deletions and move
    /// sources, new data for insertions and move destinations).
    case outOfRange(Operation, Position)
    /// Two changes use the same position in the same data (old or new) within one batch.
    case positionUsedTwice(Operation, Position)
    /// An item change targets a section that the same batch deletes, inserts, moves or reloads (a batch
    /// stage's rule; a whole ``SectionedDiff`` may move a section and change its items).
    case itemInChangedSection(Operation, Position)
    /// A reload targets an item or section that the same batch deletes or moves, or whose position the
    /// batch's other changes shift (a table view reloads by deleting and inserting at one position).
    case reloadOfChangedPosition(Operation, Position)
    /// After deletions, insertions and moves, the remaining elements don't fill the new data exactly:
    /// `expected` unchanged elements were needed (in `section`, if sectioned) but `actual` remained.
    case inconsistentCount(section: Int?, expected: Int, actual: Int)
    /// An update's new position isn't where the other changes put the element from its old position.
    case misplacedUpdate(Operation, from: Position, to: Position)
    /// Applying a batch stage didn't yield the sections the stage carries (first differing section).
    case dataMismatch(section: Int)

    /// The error as a sentence naming the operation and position at fault.
    public var description: String {
        switch self {
        case .countMismatch(let expected, let actual):
            "The changes were computed for \(expected) elements, but the data has \(actual)."
        case .outOfRange(let op, let position):
            "\(op.withArticle) names \(position), which is out of range."
        case .positionUsedTwice(let op, let position):
            "\(op.withArticle) uses \(position), which another change in the same batch already uses."
        case .itemInChangedSection(let op, let position):
            "\(op.withArticle) targets \(position) in a section that the same batch deletes, inserts, moves or reloads."
        case .reloadOfChangedPosition(let op, let position):
            "\(op.withArticle) targets \(position), which the same batch deletes, moves or shifts."
        case .inconsistentCount(let section, let expected, let actual):
            if let section {
                "Section \(section) needs \(expected) unchanged items after the changes, but \(actual) remain."
            } else {
                "The new data needs \(expected) unchanged elements after the changes, but \(actual) remain."
            }
        case .misplacedUpdate(let op, let from, let to):
            "\(op.withArticle) from \(from) to \(to) disagrees with where the other changes put that element."
        case .dataMismatch(let section):
            "Applying the stage does not yield the sections it carries (section \(section) differs)."
        }
    }
}
