import Foundation
import Synchronization

// Timing, medians, threads and the printed table. Every scenario measures LoopKit and its peers in
// the same process, on a monotonic clock: one warm-up run of each, then `runs` rounds in which LoopKit and
// its peers run alternately (L, P, L, P, …). Each figure is a median with its min–max; each ratio is the
// median of the per-round ratios, with their min–max, so a lucky run cannot flatter either side.

// MARK: Options

/// What the command line asked for (parsed by hand: `--quick`, `--json`, `--runs N`, `--only NAME`,
/// `--callgrind TARGET N`, `--callgrind-list`).
struct Options: Sendable {
    /// Fewer operations per run and fewer runs, for a smoke run.
    var quick = false
    /// Print the rows as JSON instead of a table.
    var json = false
    /// Timed runs asked for with `--runs`; nil for the default (10, or 3 with `--quick`).
    var requestedRuns: Int?
    /// Run only the scenarios whose key contains this string.
    var only: String?
    /// Measure the peers too (`--no-peers` skips them, to profile LoopKit alone).
    var peers = true
    /// Run one side of one CPU-bound row for this many operations and exit (`--callgrind TARGET N`), for
    /// `callgrind.sh` to count its instructions under valgrind.
    var callgrind: (target: String, operations: Int)?
    /// List the `--callgrind` targets and exit.
    var callgrindList = false

    /// Timed runs per figure, after one warm-up: 10 by default, 3 with `--quick`, or `--runs N`.
    var runs: Int { requestedRuns ?? (quick ? 3 : 10) }

    static func parse(_ arguments: [String]) -> Options {
        var options = Options()
        var rest = arguments.dropFirst()[...]
        while let argument = rest.popFirst() {
            switch argument {
            case "--quick": options.quick = true
            case "--json": options.json = true
            case "--no-peers": options.peers = false
            case "--runs":
                guard let value = rest.popFirst().flatMap(Int.init), value >= 1 else { usage("--runs needs a positive number") }
                options.requestedRuns = value
            case "--callgrind":
                guard let target = rest.popFirst(), let value = rest.popFirst().flatMap(Int.init), value >= 1 else {
                    usage("--callgrind needs a target and a positive number of operations")
                }
                options.callgrind = (target: target, operations: value)
            case "--callgrind-list": options.callgrindList = true
            case "--only":
                guard let value = rest.popFirst() else { usage("--only needs a scenario name") }
                options.only = value
            case "-h", "--help": usage(nil)
            default: usage("unknown argument \(argument)")
            }
        }
        return options
    }

    /// `full` normally, `quick` with `--quick`.
    func count(_ full: Int, quick small: Int) -> Int { quick ? small : full }

    private static func usage(_ problem: String?) -> Never {
        if let problem { FileHandle.standardError.write(Data("error: \(problem)\n".utf8)) }
        print("""
            usage: LoopKitBenchmarks [--quick] [--json] [--runs N] [--only SCENARIO] [--no-peers]
                   LoopKitBenchmarks --callgrind TARGET N | --callgrind-list
              --quick      fewer operations per run and 3 runs (a smoke run)
              --json       one JSON object per row instead of the table
              --runs N     timed runs per figure after one warm-up (default 10), LoopKit and its peers
                           alternated; figures are medians with min–max, ratios the median per-run ratio
              --only NAME  run only scenarios whose key contains NAME (enqueue, chain, cross, invoke, timers, lateness, pingpong, idlecpu, oversub, echo, process, progress, diff, steps, memory, idlemem)
              --no-peers   measure LoopKit alone (for profiling it)
              --callgrind TARGET N
                           run one side of one CPU-bound row for N operations, untimed, and exit
                           (Benchmarks/callgrind.sh runs it under valgrind for N and 2N)
              --callgrind-list
                           the --callgrind targets, one per line: target, default N, row, side
            """)
        exit(problem == nil ? 0 : 2)
    }
}

// MARK: Clock and statistics

/// Nanoseconds on the monotonic clock (`CLOCK_MONOTONIC`, what `ContinuousClock` reads on Linux).
@inline(__always)
func monotonicNanoseconds() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
}

/// The CPU time the calling thread has used (`CLOCK_THREAD_CPUTIME_ID`): a figure preemption by other
/// processes does not inflate.
@inline(__always)
func threadCPUNanoseconds() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
    return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
}

/// The median of `values` (the mean of the middle two for an even count).
func median(_ values: [Double]) -> Double {
    precondition(!values.isEmpty)
    let sorted = values.sorted()
    let middle = sorted.count / 2
    return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
}

/// Figures measured together: each body runs once as a warm-up, then `runs` rounds in which every body
/// runs once, in the order they were added. Scenarios add them LoopKit, peer, LoopKit, peer, …, so the
/// runs alternate and load from other processes on a shared machine falls on all of them alike. Each
/// figure keeps its per-round costs (sample `i` of every figure comes from round `i`), so a row can show
/// the median of the per-round ratios and their spread.
///
/// A body does its own set-up, times only the work with ``monotonicNanoseconds()`` and returns the
/// elapsed nanoseconds for its `operations` operations.
struct Comparison {
    private struct Entry {
        let name: String
        let operations: Int
        let body: () throws -> UInt64
    }

    private let options: Options
    private var entries: [Entry] = []

    init(_ options: Options) { self.options = options }

    /// Adds a LoopKit figure (always measured).
    mutating func loopKit(_ name: String, operations: Int, _ body: @escaping () throws -> UInt64) {
        entries.append(Entry(name: name, operations: operations, body: body))
    }

    /// Adds a peer's figure (skipped with `--no-peers`).
    mutating func peer(_ name: String, operations: Int, _ body: @escaping () throws -> UInt64) {
        guard options.peers else { return }
        entries.append(Entry(name: name, operations: operations, body: body))
    }

    /// Runs the warm-ups and the interleaved rounds; returns the figures by name.
    func run() throws -> Figures {
        for entry in entries { _ = try entry.body() }
        var samples = Array(repeating: [Double](), count: entries.count)
        for _ in 0..<options.runs {
            for (index, entry) in entries.enumerated() {
                samples[index].append(Double(try entry.body()) / Double(entry.operations))
            }
        }
        var figures = Figures()
        for (index, entry) in entries.enumerated() {
            figures.byName[entry.name] = Figure(median: median(samples[index]), samples: samples[index])
        }
        figures.order = entries.map(\.name)
        return figures
    }
}

/// The figures a ``Comparison`` measured.
struct Figures {
    fileprivate(set) var byName: [String: Figure] = [:]
    fileprivate(set) var order: [String] = []

    /// The figure for `name`; every LoopKit figure is always present.
    subscript(_ name: String) -> Figure { byName[name]! }

    /// The named peers that were measured, in the order given, as a row's peer list.
    func peers(_ names: String...) -> [(name: String, figure: Figure)] {
        names.compactMap { name in byName[name].map { (name: name, figure: $0) } }
    }
}

/// A measured cost per operation, with the runs it was taken from.
struct Figure: Sendable {
    var median: Double
    /// One value per timed round, in round order (sample `i` of every figure of a comparison comes from
    /// round `i`).
    var samples: [Double]

    /// (max - min) / median: how much the runs disagreed.
    var spread: Double {
        guard let low = samples.min(), let high = samples.max(), median > 0 else { return 0 }
        return (high - low) / median
    }

    /// The lowest and highest run.
    var range: (low: Double, high: Double)? {
        guard let low = samples.min(), let high = samples.max() else { return nil }
        return (low, high)
    }
}

/// How a peer compares with LoopKit over the runs: `peer / LoopKit` of each round, summarised.
struct Ratio: Sendable {
    /// The per-round ratios (peer's cost / LoopKit's), in round order.
    var values: [Double]

    /// The median per-round ratio: above 1, LoopKit was faster.
    var median: Double { LoopKitBenchmarks.median(values) }
    var low: Double { values.min()! }
    var high: Double { values.max()! }
    /// The first and third quartiles (nearest rank).
    var quartiles: (q1: Double, q3: Double) { (percentile(values, 0.25), percentile(values, 0.75)) }

    /// The per-round ratios of `peer` to `loopKit` when both were measured in the same rounds; with one
    /// peer sample (a peer timed once), its ratio to LoopKit's median.
    init?(peer: Figure, loopKit: Figure) {
        if peer.samples.count == loopKit.samples.count, !peer.samples.isEmpty {
            values = zip(peer.samples, loopKit.samples).map { $0 / $1 }
        } else if !peer.median.isNaN, loopKit.median > 0, !loopKit.median.isNaN {
            values = [peer.median / loopKit.median]
        } else {
            return nil
        }
    }
}

// MARK: Shared state for the measured closures

/// Bumped by the measured jobs of the "captures nothing" figures. A global, so a job closure captures
/// nothing and allocates nothing. Only one thread touches it at a time: the thread running the jobs of the
/// scenario in progress, with a semaphore or thread join ordering it against the checks made afterwards.
nonisolated(unsafe) var benchCounter = 0

/// The object a caller's job closure captures (`{ counter.value &+= 1 }`), as real callers' closures
/// capture the objects they work on: making such a closure allocates its context, one per job, which a
/// closure capturing nothing (``benchCounter``) does not. The figures headed "captures an object" use it.
///
/// `@unchecked Sendable`: one thread touches `value` at a time (the thread running the jobs), ordered
/// against the checks made afterwards by a semaphore, a `wait()` or a thread join.
final class CapturedCounter: @unchecked Sendable {
    var value = 0
}

/// A one-shot signal with a time stamp, from the thread that finishes to the thread that waits.
final class Finish: Sendable {
    private let stamp = Atomic<UInt64>(0)
    private let semaphore = DispatchSemaphore(value: 0)

    /// Records the time and wakes the waiter. Call once.
    func signal() {
        stamp.store(monotonicNanoseconds(), ordering: .releasing)
        semaphore.signal()
    }

    /// Waits for ``signal()``, returns the time it recorded.
    func wait() -> UInt64 {
        semaphore.wait()
        return stamp.load(ordering: .acquiring)
    }
}

/// Starts a thread running `body`; the returned semaphore is signalled when it ends.
@discardableResult
func spawnThread(_ body: @escaping @Sendable () -> Void) -> DispatchSemaphore {
    let done = DispatchSemaphore(value: 0)
    let thread = Thread {
        body()
        done.signal()
    }
    thread.stackSize = 1 << 22
    thread.start()
    return done
}

/// Stops the benchmark with a message: a measured run did not do what it claims.
func check(_ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String) {
    if !condition() {
        FileHandle.standardError.write(Data("benchmark check failed: \(message())\n".utf8))
        exit(1)
    }
}

// MARK: Rows and the table

/// The unit a row prints in.
enum Unit: String, Sendable {
    case nanoseconds = "ns"
    case microseconds = "µs"
    case kibibytes = "KiB"

    /// `nanoseconds` (or KiB) converted to this unit.
    func scaled(_ value: Double) -> Double { self == .microseconds ? value / 1000 : value }
}

/// What a row promises.
enum Goal: Sendable {
    /// LoopKit at most this many nanoseconds per operation.
    case atMostNanoseconds(Double)
    /// LoopKit no slower than the named peer.
    case noSlowerThan(peer: String)
    /// Resident memory grows by at most this many KiB.
    case growthAtMostKiB(Double)
    /// LoopKit at most this many nanoseconds per operation, and at least `ratio` times faster than the
    /// named peer (when the peer was measured).
    case atMostNanosecondsAndTimesFaster(Double, peer: String, ratio: Double)
    /// LoopKit at least `ratio` times faster than the named peer.
    case timesFaster(peer: String, ratio: Double)
    /// LoopKit at most `times` its own `reference` figure (measured in the same run), and no slower than
    /// the named peer.
    case withinTimesOf(reference: String, times: Double, andNoSlowerThan: String)
    /// LoopKit at most this many KiB, and no more than the named peer (when it was measured).
    case atMostKiBAndNoMoreThan(Double, peer: String)
    /// An extra figure with no goal of its own.
    case none

    var description: String {
        switch self {
        case .atMostNanoseconds(let ns): "≤ \(format(ns, unit: .nanoseconds)) ns"
        case .noSlowerThan(let peer): "≤ \(peer)"
        case .growthAtMostKiB(let kib): "≈ 0 (≤ \(format(kib, unit: .kibibytes)) KiB)"
        case .atMostNanosecondsAndTimesFaster(let ns, _, let ratio):
            "≤ \(format(ns, unit: .nanoseconds)) ns, ≥ \(format(ratio, unit: .nanoseconds))x peer"
        case .timesFaster(_, let ratio): "≥ \(format(ratio, unit: .nanoseconds))x peer"
        case .withinTimesOf(_, let times, _): "≤ \(format(times, unit: .nanoseconds))x quiet, ≤ peer"
        case .atMostKiBAndNoMoreThan(let kib, _): "≤ \(format(kib, unit: .kibibytes)) KiB, ≤ peer"
        case .none: "—"
        }
    }
}

/// One scenario's figures: LoopKit's and each peer's, from the same run.
struct Row: Sendable {
    /// The scenario, as the design's table names it.
    var scenario: String
    var unit: Unit
    /// LoopKit's median cost per operation in nanoseconds (KiB for a memory row).
    var loopKit: Figure
    var peers: [(name: String, figure: Figure)]
    var goal: Goal
    /// What the reader should know to interpret the figure.
    var note: String?

    /// The named peer's figure.
    func peer(_ name: String) -> Figure? { peers.first { $0.name == name }?.figure }

    /// The median per-round ratio of the named peer to LoopKit (above 1: LoopKit faster).
    func ratio(_ name: String) -> Double? { peer(name).flatMap { Ratio(peer: $0, loopKit: loopKit) }?.median }

    /// Whether LoopKit met the goal; nil when the row has none. Ratio goals are judged on the median of the
    /// per-round ratios, nanosecond goals on LoopKit's median.
    var met: Bool? {
        switch goal {
        case .atMostNanoseconds(let ns): loopKit.median <= ns
        case .noSlowerThan(let name): ratio(name).map { $0 >= 1 }
        case .growthAtMostKiB(let kib): loopKit.median <= kib
        case .atMostNanosecondsAndTimesFaster(let ns, let name, let times):
            loopKit.median <= ns && (ratio(name).map { $0 >= times } ?? true)
        case .timesFaster(let name, let times): ratio(name).map { $0 >= times }
        case .withinTimesOf(let reference, let times, let name):
            (ratio(reference).map { $0 >= 1 / times } ?? true) && (ratio(name).map { $0 >= 1 } ?? true)
        case .atMostKiBAndNoMoreThan(let kib, let name):
            loopKit.median <= kib && (ratio(name).map { $0 >= 1 } ?? true)
        case .none: nil
        }
    }
}

/// Formats a value for the table: thousands separators, one decimal below 100.
func format(_ value: Double, unit: Unit) -> String {
    let scaled = unit.scaled(value)
    if scaled.magnitude < 100 { return String(format: "%.1f", scaled) }
    let rounded = Int(scaled.rounded())
    let digits = String(rounded.magnitude)
    var grouped = ""
    for (index, character) in digits.enumerated() {
        if index > 0, (digits.count - index) % 3 == 0 { grouped.append(",") }
        grouped.append(character)
    }
    return (rounded < 0 ? "-" : "") + grouped
}

/// A figure's cell: the median, then the runs' min–max in brackets.
func figureCell(_ figure: Figure, unit: Unit) -> String {
    let suffix = unit.rawValue + (unit == .kibibytes ? "" : "/op")
    var cell = "\(format(figure.median, unit: unit)) \(suffix)"
    if figure.samples.count > 1, let range = figure.range {
        cell += " [\(format(range.low, unit: unit))–\(format(range.high, unit: unit))]"
    }
    return cell
}

/// A ratio's cell: the median per-round ratio, its min–max, and "faster" or how many times slower.
func ratioCell(_ ratio: Ratio) -> String {
    let value = ratio.median
    var cell = String(format: "%.2fx", value)
    if ratio.values.count > 1 { cell += String(format: " [%.2f–%.2f]", ratio.low, ratio.high) }
    return cell + (value >= 1 ? " faster" : String(format: " (%.1fx slower)", 1 / value))
}

/// Prints the rows as a table: one line per peer, the goal and verdict on each scenario's first line.
func printTable(_ rows: [Row], header: String) {
    let titles = ["scenario", "LoopKit median [min–max]", "peer", "peer median [min–max]",
                  "peer/LoopKit, median per-run [min–max]", "goal", "met?"]
    var lines: [[String]] = []
    for row in rows {
        let loopKit = figureCell(row.loopKit, unit: row.unit)
        let verdict = row.met.map { $0 ? "yes" : "NO" } ?? "—"
        let peers = row.peers.isEmpty ? [(name: "—", figure: Figure(median: .nan, samples: []))] : row.peers
        for (index, peer) in peers.enumerated() {
            let hasPeer = !peer.figure.median.isNaN
            let ratio = hasPeer ? Ratio(peer: peer.figure, loopKit: row.loopKit).map(ratioCell) ?? "—" : "—"
            lines.append([
                index == 0 ? row.scenario : "",
                index == 0 ? loopKit : "",
                peer.name,
                hasPeer ? figureCell(peer.figure, unit: row.unit) : "—",
                ratio,
                index == 0 ? row.goal.description : "",
                index == 0 ? verdict : "",
            ])
        }
    }
    var widths = titles.map { $0.count }
    for line in lines {
        for (column, cell) in line.enumerated() { widths[column] = max(widths[column], cell.count) }
    }
    func render(_ cells: [String]) -> String {
        cells.enumerated().map { column, cell in
            let pad = String(repeating: " ", count: widths[column] - cell.count)
            return column == 1 || column == 3 ? pad + cell : cell + pad
        }.joined(separator: " | ")
    }
    print(header)
    print(render(titles))
    let separator = widths.map { String(repeating: "-", count: $0) }.joined(separator: "-|-")
    print(separator)
    var scenario = ""
    for line in lines {
        if !line[0].isEmpty, !scenario.isEmpty { print(separator) }
        if !line[0].isEmpty { scenario = line[0] }
        print(render(line))
    }
    let notes = rows.compactMap { row in row.note.map { "- \(row.scenario): \($0)" } }
    if !notes.isEmpty {
        print("\nNotes:")
        notes.forEach { print($0) }
    }
    var spreads: [(name: String, figure: Figure)] = []
    for row in rows {
        var figures: [(name: String, figure: Figure)] = [(name: "LoopKit", figure: row.loopKit)]
        figures += row.peers
        for entry in figures where entry.figure.samples.count > 1 && entry.figure.spread > 0.25 {
            spreads.append((name: "\(row.scenario) / \(entry.name)", figure: entry.figure))
        }
    }
    if !spreads.isEmpty {
        print("\nNoisy figures (runs differ by more than 25% of the median; the machine is shared):")
        for (name, figure) in spreads { print("- \(name): spread \(Int((figure.spread * 100).rounded()))%") }
    }
}

/// Prints the rows as JSON, one object per scenario: medians, every run's value, and for each peer the
/// per-run ratios with their median, min, max and quartiles.
func printJSON(_ rows: [Row]) {
    func number(_ value: Double) -> String { value.isFinite ? String(format: "%.3f", value) : "null" }
    func string(_ value: String) -> String {
        var escaped = ""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": escaped += "\\\""
            case "\\": escaped += "\\\\"
            case "\n": escaped += "\\n"
            default: escaped.unicodeScalars.append(scalar)
            }
        }
        return "\"\(escaped)\""
    }
    func array(_ values: [Double]) -> String { "[" + values.map(number).joined(separator: ", ") + "]" }
    let objects = rows.map { row -> String in
        let peers = row.peers.map { peer in
            var object = "{\"name\": \(string(peer.name)), \"median\": \(number(peer.figure.median)), "
                + "\"samples\": \(array(peer.figure.samples))"
            if let ratio = Ratio(peer: peer.figure, loopKit: row.loopKit) {
                let (q1, q3) = ratio.quartiles
                object += ", \"ratio\": \(number(ratio.median)), \"ratio_min\": \(number(ratio.low)), "
                    + "\"ratio_max\": \(number(ratio.high)), \"ratio_q1\": \(number(q1)), \"ratio_q3\": \(number(q3)), "
                    + "\"ratio_samples\": \(array(ratio.values))"
            }
            return object + "}"
        }
        let met = row.met.map { $0 ? "true" : "false" } ?? "null"
        return "  {\"scenario\": \(string(row.scenario)), \"unit\": \(string(row.unit == .kibibytes ? "KiB" : "ns/op")), "
            + "\"loopkit\": \(number(row.loopKit.median)), \"loopkit_samples\": \(array(row.loopKit.samples)), "
            + "\"peers\": [\(peers.joined(separator: ", "))], \"goal\": \(string(row.goal.description)), \"met\": \(met)"
            + (row.note.map { ", \"note\": \(string($0))" } ?? "") + "}"
    }
    print("[\n" + objects.joined(separator: ",\n") + "\n]")
}
