import LoopKit

/// A row of the demo's list: identity `id`, content `title`.
public struct ListRow: Diffable, Sendable, CustomStringConvertible {
    public let id: Int
    public var title: String
    public var diffID: Int { id }
    public init(_ id: Int, _ title: String) {
        self.id = id
        self.title = title
    }
    public var description: String { title }
}

/// A sectioned list drawn in the terminal: the demo's ``BatchUpdateTarget``.
///
/// It keeps its own copy of the sections (as a table view does) and marks what each round of batch
/// updates did: inserted, moved, updated and deleted rows. Call on the loop thread (the thread that
/// commits), like a table view on the main thread.
public final class TerminalList: BatchUpdateTarget {
    public typealias Model = String
    public typealias Item = ListRow
    public typealias Section = DiffSection<String, ListRow>

    public enum Mark: Equatable {
        case inserted
        case moved(from: ItemPath)
        case updated
    }

    public private(set) var sections: [Section]
    /// Marks of the current round, by row identity.
    public private(set) var marks: [Int: Mark] = [:]
    /// Rows deleted in the current round, with their old position.
    public private(set) var deleted: [(path: ItemPath, row: ListRow)] = []
    /// Batches performed in the current round.
    public private(set) var batches = 0
    /// The sections before the batch in progress (batch operations use old indices).
    private var before: [Section] = []

    public init(_ sections: [Section]) { self.sections = sections }

    /// Forgets the marks of the previous round.
    public func beginRound() {
        marks = [:]
        deleted = []
        batches = 0
    }

    public func performBatchUpdates(_ updates: () -> Void) {
        before = sections
        batches += 1
        updates()
    }

    public func reloadData(_ sections: [Section]) {
        self.sections = sections
        batches += 1
        for section in sections { for row in section.items { marks[row.id] = .updated } }
    }

    public func setSections(_ sections: [Section]) { self.sections = sections }

    public func deleteSections(_ indices: [Int]) {
        for index in indices {
            for (item, row) in before[index].items.enumerated() { deleted.append((ItemPath(section: index, item: item), row)) }
        }
    }

    public func insertSections(_ indices: [Int]) {
        for index in indices { for row in sections[index].items { marks[row.id] = .inserted } }
    }

    public func moveSection(_ section: Int, toSection newSection: Int) {}

    public func reloadSections(_ indices: [Int]) {
        for index in indices { for row in before[index].items { marks[row.id] = .updated } }
    }

    public func deleteItems(at paths: [ItemPath]) {
        for path in paths { deleted.append((path, before[path.section].items[path.item])) }
    }

    public func insertItems(at paths: [ItemPath]) {
        for path in paths { marks[sections[path.section].items[path.item].id] = .inserted }
    }

    public func moveItem(at path: ItemPath, to newPath: ItemPath) {
        let row = sections[newPath.section].items[newPath.item]
        if marks[row.id] != .inserted { marks[row.id] = .moved(from: path) }
    }

    public func reloadItems(at paths: [ItemPath]) {
        for path in paths {
            let id = before[path.section].items[path.item].id
            if case .moved? = marks[id] { continue }
            marks[id] = .updated
        }
    }

    /// Counts of this round's marks.
    public var counts: (inserted: Int, deleted: Int, moved: Int, updated: Int) {
        var counts = (inserted: 0, deleted: deleted.count, moved: 0, updated: 0)
        for mark in marks.values {
            switch mark {
            case .inserted: counts.inserted += 1
            case .moved: counts.moved += 1
            case .updated: counts.updated += 1
            }
        }
        return counts
    }

    /// The list as lines, marked: `+` inserted, `↕` moved (with where from), `~` updated, `-` deleted.
    public func render(_ out: DemoOutput) -> [String] {
        var lines: [String] = []
        for (s, section) in sections.enumerated() {
            lines.append("    \(out.bold(section.model))")
            for row in section.items {
                let title = row.title.padding(to: 24)
                switch marks[row.id] {
                case .inserted?: lines.append("      " + out.green("+ \(title) inserted"))
                case .moved(let from)?:
                    let origin = from.section < before.count ? before[from.section].model : "?"
                    lines.append("      " + out.yellow("↕ \(title) moved from \(origin) #\(from.item + 1)"))
                case .updated?: lines.append("      " + out.cyan("~ \(title) updated"))
                case nil: lines.append("        \(row.title)")
                }
            }
            for entry in deleted where entry.path.section == s {
                lines.append("      " + out.red("- \(entry.row.title.padding(to: 24)) deleted"))
            }
        }
        return lines
    }

    /// The rows, for checking against the data source.
    public var rowIDs: [[Int]] { sections.map { $0.items.map(\.id) } }
    public var titles: [[String]] { sections.map { $0.items.map(\.title) } }
}
