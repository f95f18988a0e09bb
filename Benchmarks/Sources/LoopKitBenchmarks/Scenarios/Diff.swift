import Foundation
import LoopKit

/// Rows 8 and 9: diffing, against the standard library's `difference(from:)` + `inferringMoves()`.
///
/// Shapes (deterministic, seeded): `0..<n` as the old array; the new array removes n/10 random
/// elements, inserts n/10 new identifiers and moves n/50 survivors to random positions. `Int` elements are
/// their own identity. Every LoopKit diff is checked (`apply(to: old) == new`) before timing. The
/// standard library's diff takes seconds at 100k, so it is timed once (no warm-up) in the same run.
/// Memory: the peak resident set growth while one diff runs (`VmHWM`, reset through
/// `/proc/self/clear_refs` before each), at several sizes, to show it grows linearly with n.
enum DiffBenchmark {
    static let flat100k = "LoopKit Diff, 100k"
    static let flat1M = "LoopKit Diff, 1M"
    static let sectioned100k = "LoopKit SectionedDiff + stages(), 100k in 100 sections"
    static let stdlibPeer = "stdlib difference + inferringMoves (1 run)"

    static func run(_ options: Options) throws -> [Row] {
        let small = options.count(100_000, quick: 10_000)
        let large = options.count(1_000_000, quick: 100_000)
        let (old, new) = shape(count: small, seed: 0xD1FF)
        let (oldLarge, newLarge) = shape(count: large, seed: 0x1D1FF)
        check((try? Diff(from: old, to: new).apply(to: old)) == new, "LoopKit's 100k diff does not apply")
        check((try? Diff(from: oldLarge, to: newLarge).apply(to: oldLarge)) == newLarge, "LoopKit's 1M diff does not apply")
        let oldSections = sections(old, count: 100), newSections = sections(new, count: 100)
        let sectioned = SectionedDiff(from: oldSections, to: newSections)
        check((try? sectioned.stages().reduce(oldSections) { data, stage in try stage.apply(to: data) }) == newSections, "LoopKit's sectioned stages do not apply")

        // Memory first, before the timed runs grow the heap.
        let memoryRows = [small / 10, small, large / 4, large].map { memoryRow(count: $0) }

        var comparison = Comparison(options)
        comparison.loopKit(flat100k, operations: 1) {
            let start = monotonicNanoseconds()
            let diff = Diff(from: old, to: new)
            let elapsed = monotonicNanoseconds() - start
            check(diff.deletions.count == small / 10 && diff.insertions.count == small / 10, "unexpected 100k diff")
            return elapsed
        }
        comparison.loopKit(flat1M, operations: 1) {
            let start = monotonicNanoseconds()
            let diff = Diff(from: oldLarge, to: newLarge)
            let elapsed = monotonicNanoseconds() - start
            check(diff.deletions.count == large / 10 && diff.insertions.count == large / 10, "unexpected 1M diff")
            return elapsed
        }
        comparison.loopKit(sectioned100k, operations: 1) {
            let start = monotonicNanoseconds()
            let stages = SectionedDiff(from: oldSections, to: newSections).stages()
            let elapsed = monotonicNanoseconds() - start
            check(!stages.isEmpty, "no stages")
            return elapsed
        }
        let figures = try comparison.run()
        let moves = Diff(from: old, to: new).moves.count

        var peers: [(name: String, figure: Figure)] = []
        if options.peers {
            let start = monotonicNanoseconds()
            let difference = new.difference(from: old).inferringMoves()
            let elapsed = Double(monotonicNanoseconds() - start)
            check(old.applying(difference) == new, "the standard library's difference does not apply")
            peers = [(name: stdlibPeer, figure: Figure(median: elapsed, samples: [elapsed]))]
        }

        let label = { (n: Int) in n >= 1_000_000 ? "\(n / 1_000_000)M" : "\(n / 1_000)k" }
        return [
            Row(scenario: "diff \(label(small)) items, −\(label(small / 10))/+\(label(small / 10))/\(label(small / 50)) moved",
                unit: .microseconds, loopKit: figures[flat100k], peers: peers,
                goal: .atMostNanosecondsAndTimesFaster(10_000_000, peer: stdlibPeer, ratio: 400),
                note: "Int elements, their own identity; \(moves) moves found (a survivor moved next to another "
                    + "mover can stay in place). The standard library's Myers diff is O((N+M)·D): timed once."),
            Row(scenario: "diff \(label(large)) items, same shape", unit: .microseconds, loopKit: figures[flat1M],
                peers: [], goal: .atMostNanoseconds(200_000_000), note: nil),
            Row(scenario: "sectioned diff + stages, \(label(small)) items in 100 sections", unit: .microseconds,
                loopKit: figures[sectioned100k], peers: [], goal: .none,
                note: "the new array cut into 100 equal sections, so many items change section (moves across sections)."),
        ] + memoryRows
    }

    /// The peak resident set growth while diffing `count` items of the benchmark's shape.
    static func memoryRow(count: Int) -> Row {
        let (old, new) = shape(count: count, seed: 0x3E3 &+ UInt64(count))
        let before = resetPeakResidentKiB()
        let diff = Diff(from: old, to: new)
        let peak = peakResidentKiB()
        withExtendedLifetime(diff) {}
        let growth = Double(max(0, peak - before))
        let perItem = growth * 1024 / Double(count)
        return Row(scenario: "diff memory, \(count) items (peak RSS growth)", unit: .kibibytes,
                   loopKit: Figure(median: growth, samples: [growth]), peers: [], goal: .none,
                   note: String(format: "%.1f bytes per item (malloc_trim, VmHWM reset before the diff, read after; inputs excluded).", perItem))
    }

    /// Returns free heap pages to the system (`malloc_trim`), so that the diff's allocations show in the
    /// resident set instead of reusing pages freed earlier, then resets the peak resident set size to the
    /// current one (`/proc/self/clear_refs`); returns it in KiB.
    static func resetPeakResidentKiB() -> Int {
        if let symbol = dlsym(nil, "malloc_trim") {  // glibc's <malloc.h>, which Swift's Glibc module leaves out
            _ = unsafeBitCast(symbol, to: (@convention(c) (Int) -> Int32).self)(0)
        }
        try? "5".write(toFile: "/proc/self/clear_refs", atomically: false, encoding: .utf8)
        return statusKiB("VmRSS:")
    }

    /// The peak resident set size since the last reset, in KiB.
    static func peakResidentKiB() -> Int { statusKiB("VmHWM:") }

    /// A `kB` field of `/proc/self/status`.
    static func statusKiB(_ field: String) -> Int {
        guard let text = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
            let line = text.split(separator: "\n").first(where: { $0.hasPrefix(field) })
        else { return 0 }
        return Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") ?? 0
    }

    /// `0..<count`, and an edit removing count/10, inserting count/10 and moving count/50 of it.
    static func shape(count: Int, seed: UInt64) -> (old: [Int], new: [Int]) {
        var rng = BenchRNG(state: seed)
        let old = Array(0..<count)
        var keep = [Bool](repeating: true, count: count)
        var removed = 0
        while removed < count / 10 {
            let i = Int.random(in: 0..<count, using: &rng)
            if keep[i] { keep[i] = false; removed += 1 }
        }
        let survivors = old.filter { keep[$0] }
        var taken = Set<Int>()
        while taken.count < count / 50 { taken.insert(Int.random(in: 0..<survivors.count, using: &rng)) }
        var base: [Int] = []
        base.reserveCapacity(count)
        for (k, v) in survivors.enumerated() where !taken.contains(k) { base.append(v) }
        var extras = taken.map { survivors[$0] } + Array(count..<(count + count / 10))
        extras.shuffle(using: &rng)
        var slots = extras.indices.map { _ in Int.random(in: 0...base.count, using: &rng) }
        slots.sort()
        var new: [Int] = []
        new.reserveCapacity(base.count + extras.count)
        var e = 0
        for (k, v) in base.enumerated() {
            while e < slots.count && slots[e] == k { new.append(extras[e]); e += 1 }
            new.append(v)
        }
        new.append(contentsOf: extras[e...])
        return (old, new)
    }

    /// `items` cut into `count` sections of (nearly) equal size.
    static func sections(_ items: [Int], count: Int) -> [DiffSection<Int, Int>] {
        let size = (items.count + count - 1) / count
        return (0..<count).map { s in
            DiffSection(s, items: Array(items[min(items.count, s * size)..<min(items.count, (s + 1) * size)]))
        }
    }
}

/// SplitMix64: a seeded generator, so every run diffs the same data.
struct BenchRNG: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
