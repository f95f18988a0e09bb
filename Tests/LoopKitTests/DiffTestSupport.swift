import LoopKit

/// SplitMix64: a small seeded generator, so every property test sees the same inputs on every run.
struct DiffTestRNG: RandomNumberGenerator {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// An item with an identity (`id`) and content (`value`).
struct DiffRow: Diffable, Hashable, Sendable, CustomStringConvertible {
    var id: Int
    var value: Int
    var diffID: Int { id }
    var description: String { "\(id):\(value)" }
}

/// A section header with an identity and a title.
struct DiffHeader: Diffable, Hashable, Sendable, CustomStringConvertible {
    var id: Int
    var title: Int
    var diffID: Int { id }
    var description: String { "H\(id):\(title)" }
}

/// A value whose hash always collides: identity must come from `==`, never from the hash.
struct DiffCollidingHash: Diffable, Hashable, Sendable {
    var name: String
    func hash(into hasher: inout Hasher) { hasher.combine(0) }
}

typealias DiffRowSection = DiffSection<DiffHeader, DiffRow>

extension DiffTestRNG {
    /// A random integer in `range`.
    mutating func int(_ range: Range<Int>) -> Int { Int.random(in: range, using: &self) }
    /// True `percent` times out of a hundred.
    mutating func chance(_ percent: Int) -> Bool { int(0..<100) < percent }
}

/// Random old data and a random edit of it: deletions, insertions, moves, updates and (with
/// `duplicatePercent`) repeated identifiers.
func diffRandomRows(
    _ rng: inout DiffTestRNG, maxCount: Int = 40, duplicatePercent: Int = 10
) -> (old: [DiffRow], new: [DiffRow]) {
    let count = rng.int(0..<(maxCount + 1))
    var nextID = 0
    func makeRow(_ rng: inout DiffTestRNG, existing: [DiffRow]) -> DiffRow {
        if !existing.isEmpty, rng.chance(duplicatePercent) {
            return DiffRow(id: existing[rng.int(0..<existing.count)].id, value: rng.int(0..<3))
        }
        nextID += 1
        return DiffRow(id: nextID, value: rng.int(0..<3))
    }
    var old: [DiffRow] = []
    for _ in 0..<count { old.append(makeRow(&rng, existing: old)) }
    var new = old
    for _ in 0..<rng.int(0..<(count / 2 + 3)) {
        switch rng.int(0..<4) {
        case 0 where !new.isEmpty:
            new.remove(at: rng.int(0..<new.count))
        case 1:
            new.insert(makeRow(&rng, existing: old + new), at: rng.int(0..<(new.count + 1)))
        case 2 where !new.isEmpty:
            let row = new.remove(at: rng.int(0..<new.count))
            new.insert(row, at: rng.int(0..<(new.count + 1)))
        case 3 where !new.isEmpty:
            new[rng.int(0..<new.count)].value = rng.int(0..<3)
        default:
            break
        }
    }
    return (old, new)
}

/// Random old sections and a random edit: section and item deletions, insertions, moves (also across
/// sections), updates and repeated identifiers.
func diffRandomSections(
    _ rng: inout DiffTestRNG, maxSections: Int = 6, maxItems: Int = 8, duplicatePercent: Int = 8
) -> (old: [DiffRowSection], new: [DiffRowSection]) {
    var nextItem = 0
    var nextSection = 0
    func makeRow(_ rng: inout DiffTestRNG) -> DiffRow {
        if nextItem > 0, rng.chance(duplicatePercent) { return DiffRow(id: rng.int(1..<(nextItem + 1)), value: rng.int(0..<3)) }
        nextItem += 1
        return DiffRow(id: nextItem, value: rng.int(0..<3))
    }
    func makeSection(_ rng: inout DiffTestRNG) -> DiffRowSection {
        let id: Int
        if nextSection > 0, rng.chance(duplicatePercent) { id = rng.int(1..<(nextSection + 1)) } else {
            nextSection += 1
            id = nextSection
        }
        return DiffRowSection(DiffHeader(id: id, title: rng.int(0..<3)), items: (0..<rng.int(0..<(maxItems + 1))).map { _ in makeRow(&rng) })
    }
    let old = (0..<rng.int(0..<(maxSections + 1))).map { _ in makeSection(&rng) }
    var new = old
    for _ in 0..<rng.int(0..<8) {
        switch rng.int(0..<9) {
        case 0 where !new.isEmpty:
            new.remove(at: rng.int(0..<new.count))
        case 1:
            new.insert(makeSection(&rng), at: rng.int(0..<(new.count + 1)))
        case 2 where !new.isEmpty:
            let section = new.remove(at: rng.int(0..<new.count))
            new.insert(section, at: rng.int(0..<(new.count + 1)))
        case 3 where !new.isEmpty:
            new[rng.int(0..<new.count)].model.title = rng.int(0..<3)
        case 4 where !new.isEmpty:
            let s = rng.int(0..<new.count)
            if !new[s].items.isEmpty { new[s].items.remove(at: rng.int(0..<new[s].items.count)) }
        case 5 where !new.isEmpty:
            let s = rng.int(0..<new.count)
            new[s].items.insert(makeRow(&rng), at: rng.int(0..<(new[s].items.count + 1)))
        case 6 where !new.isEmpty:  // move, possibly to another section
            let s = rng.int(0..<new.count)
            let t = rng.int(0..<new.count)
            if !new[s].items.isEmpty {
                let row = new[s].items.remove(at: rng.int(0..<new[s].items.count))
                new[t].items.insert(row, at: rng.int(0..<(new[t].items.count + 1)))
            }
        case 7 where !new.isEmpty:
            let s = rng.int(0..<new.count)
            if !new[s].items.isEmpty { new[s].items[rng.int(0..<new[s].items.count)].value = rng.int(0..<3) }
        default:
            break
        }
    }
    return (old, new)
}

/// Identifiers occurring more than once in `old` or in `new`, by brute force.
func diffBruteForceDuplicates<ID: Hashable>(_ old: [ID], _ new: [ID]) -> Set<ID> {
    var result = Set<ID>()
    for list in [old, new] {
        var seen = Set<ID>()
        for id in list where !seen.insert(id).inserted { result.insert(id) }
    }
    return result
}

/// The fewest moves for the pairing "k-th occurrence in old with k-th in new", by an O(n²) LIS.
func diffBruteForceMoveCount(_ old: [DiffRow], _ new: [DiffRow]) -> Int {
    var queues: [Int: [Int]] = [:]
    for (i, row) in old.enumerated() { queues[row.id, default: []].append(i) }
    var sequence: [Int] = []
    for row in new {
        if var queue = queues[row.id], !queue.isEmpty {
            sequence.append(queue.removeFirst())
            queues[row.id] = queue
        }
    }
    var best = [Int](repeating: 1, count: sequence.count)
    for k in sequence.indices {
        for l in 0..<k where sequence[l] < sequence[k] { best[k] = max(best[k], best[l] + 1) }
    }
    return sequence.count - (best.max() ?? 0)
}

/// Random old sections and an edit that, most of the time, moves one section and changes its items
/// (insertions, deletions, moves within it and across sections, updates), often updating its model too,
/// on top of the mixed edits of ``diffRandomSections(_:maxSections:maxItems:duplicatePercent:)``: the
/// cases ``SectionedDiff/stages()`` must fit in two stages.
func diffRandomSectionsMovingEdited(_ rng: inout DiffTestRNG) -> (old: [DiffRowSection], new: [DiffRowSection]) {
    var (old, new) = diffRandomSections(&rng, maxSections: 5, maxItems: 5, duplicatePercent: 4)
    if old.count < 2, rng.chance(80) {
        // Enough sections to move one; fresh identities, not in use.
        old = (0..<rng.int(2..<5)).map { k in
            DiffRowSection(DiffHeader(id: 500 + k, title: 0), items: (0..<rng.int(0..<4)).map { DiffRow(id: 600 + 10 * k + $0, value: 0) })
        }
        new = old
    }
    guard new.count >= 2, rng.chance(85) else { return (old, new) }
    var nextID = 1_000
    let from = rng.int(0..<new.count)
    var section = new.remove(at: from)
    var to = rng.int(0..<new.count)
    if to >= from { to += 1 }  // a different place
    if rng.chance(65) { section.model.title = (section.model.title + 1) % 3 }
    for _ in 0..<rng.int(1..<4) {
        switch rng.int(0..<6) {
        case 0:
            nextID += 1
            section.items.insert(DiffRow(id: nextID, value: 0), at: rng.int(0..<(section.items.count + 1)))
        case 1 where !section.items.isEmpty:
            section.items.remove(at: rng.int(0..<section.items.count))
        case 2 where section.items.count >= 2:
            let row = section.items.remove(at: rng.int(0..<section.items.count))
            section.items.insert(row, at: rng.int(0..<(section.items.count + 1)))
        case 3 where !section.items.isEmpty:  // leaves for another section
            let other = rng.int(0..<new.count)
            let row = section.items.remove(at: rng.int(0..<section.items.count))
            new[other].items.insert(row, at: rng.int(0..<(new[other].items.count + 1)))
        case 4:  // arrives from another section
            let other = rng.int(0..<new.count)
            if !new[other].items.isEmpty {
                var row = new[other].items.remove(at: rng.int(0..<new[other].items.count))
                if rng.chance(40) { row.value = (row.value + 1) % 3 }
                section.items.insert(row, at: rng.int(0..<(section.items.count + 1)))
            }
        case 5 where !section.items.isEmpty:
            section.items[rng.int(0..<section.items.count)].value += 1
        default:
            break
        }
    }
    new.insert(section, at: to)
    // Updates elsewhere: a model, an item.
    if rng.chance(50) {
        let s = rng.int(0..<new.count)
        if !new[s].items.isEmpty { new[s].items[rng.int(0..<new[s].items.count)].value += 1 }
    }
    if rng.chance(30) { new[rng.int(0..<new.count)].model.title += 1 }
    return (old, new)
}

/// Random old sections and an edit that moves one or two sections and moves items across sections,
/// often to the front of their new section, updates items (often behind those arrivals) and repeats
/// identifiers, on top of the mixed edits of
/// ``diffRandomSections(_:maxSections:maxItems:duplicatePercent:)``: the shape where an item leaves a
/// section that moves for another section whose updated items it shifts.
func diffRandomSectionsShiftingReloads(_ rng: inout DiffTestRNG) -> (old: [DiffRowSection], new: [DiffRowSection]) {
    var (old, new) = diffRandomSections(&rng, maxSections: 4, maxItems: 5, duplicatePercent: 10)
    if old.count < 2 || new.count < 2 {
        // Enough sections to move one; fresh identities, some of them repeated.
        var ids: [Int] = []
        old = (0..<rng.int(2..<5)).map { k in
            let items = (0..<rng.int(0..<5)).map { j -> DiffRow in
                let id = !ids.isEmpty && rng.chance(10) ? ids[rng.int(0..<ids.count)] : 700 + 10 * k + j
                ids.append(id)
                return DiffRow(id: id, value: 0)
            }
            return DiffRowSection(DiffHeader(id: 700 + k, title: 0), items: items)
        }
        new = old
    }
    var moved = 0
    for _ in 0..<rng.int(1..<3) {
        let section = new.remove(at: rng.int(0..<new.count))
        moved = rng.int(0..<(new.count + 1))
        new.insert(section, at: moved)
    }
    // Items cross sections: mostly out of the section just moved, often to the front of another one,
    // with an update behind them there.
    for _ in 0..<rng.int(1..<4) {
        let s = rng.chance(70) ? moved : rng.int(0..<new.count)
        let t = rng.int(0..<new.count)
        guard !new[s].items.isEmpty else { continue }
        var row = new[s].items.remove(at: rng.int(0..<new[s].items.count))
        if rng.chance(30) { row.value += 1 }
        let at = rng.chance(50) ? 0 : rng.int(0..<(new[t].items.count + 1))
        new[t].items.insert(row, at: at)
        if rng.chance(70), at + 1 < new[t].items.count {
            new[t].items[rng.int((at + 1)..<new[t].items.count)].value += 1
        }
    }
    for _ in 0..<rng.int(0..<3) {
        let s = rng.int(0..<new.count)
        if !new[s].items.isEmpty { new[s].items[rng.int(0..<new[s].items.count)].value += 1 }
    }
    if rng.chance(25) { new[rng.int(0..<new.count)].model.title += 1 }
    if rng.chance(25) {
        let s = rng.int(0..<new.count)
        new[s].items.insert(DiffRow(id: 2_000 + rng.int(0..<1_000), value: 0), at: rng.int(0..<(new[s].items.count + 1)))
    }
    if rng.chance(25) {
        let s = rng.int(0..<new.count)
        if !new[s].items.isEmpty { new[s].items.remove(at: rng.int(0..<new[s].items.count)) }
    }
    return (old, new)
}
