import Foundation
import LoopKit
import NIOCore
import NIOPosix

// LoopKit against SwiftNIO, Dispatch and Foundation, in one process: each row measures LoopKit and its
// peers in the same run (one warm-up, then timed runs alternating LoopKit and its peers) and prints each
// figure's median with its min–max, and the median per-run ratio peer / LoopKit ("x faster") with its
// min–max, next to the design's goal.

// A child process started by a scenario (the hidden sub-command) runs only its role, then exits.
if let server = IdleConnectionServer(arguments: CommandLine.arguments) { server.run() }

let options = Options.parse(CommandLine.arguments)
// `--callgrind TARGET N` / `--callgrind-list`: one side of one row, untimed, for callgrind.sh.
if options.callgrind != nil || options.callgrindList { Callgrind.main(options) }
/// The 1-minute load average when the run began: other processes on a shared machine inflate figures.
let loadAtStart = (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8))?.split(separator: " ").first ?? "?"
let nio = MultiThreadedEventLoopGroup(numberOfThreads: 1)

let scenarios: [(key: String, run: () throws -> [Row])] = [
    ("memory", { try MemoryIterations.run(options) }),
    ("enqueue", { try EnqueueSameThread.run(options, nio: nio) }),
    ("chain", { try ChainOnePerIteration.run(options, nio: nio) }),
    ("cross", { try EnqueueCrossThread.run(options, nio: nio) }),
    ("invoke", { try InvokeRoundTrip.run(options, nio: nio) }),
    ("timers", { try TimersScheduleAndFire.run(options, nio: nio) }),
    ("lateness", { try TimerLateness.run(options, nio: nio) }),
    ("pingpong", { try LoopToLoopPingPong.run(options) }),
    ("idlecpu", { try IdleLoopCPU.run(options) }),
    ("oversub", { try OversubscribedBurst.run(options, nio: nio) }),
    ("echo", { try TCPEcho.run(options) }),
    ("idlemem", { try IdleConnectionMemory.run(options) }),
    ("process", { try ArrayProcessorBudget.run(options) }),
    ("progress", { try ProgressIncrements.run(options) }),
    ("diff", { try DiffBenchmark.run(options) }),
    ("steps", { try StepSequenceChain.run(options) }),
]

var rows: [Row] = []
let started = monotonicNanoseconds()
for scenario in scenarios where options.only.map({ scenario.key.contains($0) }) ?? true {
    if !options.json {
        FileHandle.standardError.write(Data("running \(scenario.key)…\n".utf8))
    }
    rows += try scenario.run()
}
// The memory row runs first (before the other scenarios grow the heap) but prints last.
rows = rows.filter { $0.unit != .kibibytes } + rows.filter { $0.unit == .kibibytes }
try nio.syncShutdownGracefully()

if options.json {
    printJSON(rows)
} else {
    let seconds = Double(monotonicNanoseconds() - started) / 1e9
    let mode = options.quick ? "quick" : "full"
    printTable(rows, header: """
        LoopKit benchmarks (\(mode) run: 1 warm-up, then \(options.runs) runs alternating LoopKit and its peers; \
        figures: median [min–max of the runs]; ratios: median [min–max] of the per-run peer/LoopKit); libevent \(EventLoop.libeventVersion), \
        \(ProcessInfo.processInfo.activeProcessorCount) cores, load average \(loadAtStart) at start, \
        \(String(format: "%.0f", seconds)) s

        """)
    let missed = rows.filter { $0.met == false }.map(\.scenario)
    print(missed.isEmpty ? "\nAll goals met." : "\nGoals missed: \(missed.joined(separator: "; ")).")
}
