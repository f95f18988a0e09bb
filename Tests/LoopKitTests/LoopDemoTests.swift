import Foundation
import LoopDemoKit
import LoopKit
import Testing
import TestSupport

/// The demo (`make demo`): its tour without a terminal, its JSON, its command line, and (with tmux) its
/// live bars and Ctrl-C in a real terminal.
@Suite("LoopDemo")
struct LoopDemoTests {
    /// Text the output wrote, captured instead of going to stdout.
    final class Capture: Sendable {
        private let storage = Lock("")
        func append(_ text: String) { storage.withLock { $0 += text } }
        var text: String { storage.withLock { $0 } }
    }

    static let partIDs = ["responsiveness", "progress-tree", "steps", "batch-updates", "cross-thread"]

    /// Runs the quick tour in-process in `mode` (no SIGINT handling: other suites may use signals). In
    /// process the tour runs on a loop of the test's thread, not the main loop, so the main-actor part
    /// (which needs it) is left out here and run through the built `LoopDemo` below.
    static func runQuickTour(_ mode: OutputMode) throws -> (Tour.Report, String) {
        let capture = Capture()
        let output = DemoOutput(options: OutputOptions(mode: mode, color: true), sink: { capture.append($0) })
        let settings = TourSettings.quick
        let parts = Tour.standardParts(settings).filter { $0.id != "main-actor" }
        let report = try Tour(parts: parts, settings: settings, output: output,
                              handlesInterrupts: false).run()
        return (report, capture.text)
    }

    @Test func tourWithoutATerminalPrintsEveryPartInPlainLinesWithoutEscapeCodes() throws {
        let (report, text) = try Self.runQuickTour(.plain)
        #expect(report.completed == Self.partIDs)
        #expect(!report.interrupted)
        #expect(!text.contains("\u{1B}"), "plain output must not contain escape codes")
        let expected = [
            // Responsiveness: bar milestones with count and percent, the longest iteration, per-item mode.
            "[1/5] Responsiveness", "items [", "% — ", "of 100,000 items", "budget mode (4 ms): 100,000 items",
            "longest loop iteration:", "spinner:", "per-item mode: 1,000 items", "1,001 iterations",
            // Progress tree: three job bars and the total, coalesced deliveries.
            "[2/5] Progress tree", "checksum [", "compress [", "index    [", "total    [", "3 of 3 jobs",
            "checksum succeeded, compress succeeded, index succeeded", "deliveries over",
            // Step sequences: running, done, retried, failed, cancelled.
            "[3/5] Step sequence", "install › resolve: running", "install › fetch manifest: attempt 1 failed",
            "retried", "install › fetch manifest: done", "on attempt 2", "install: succeeded — 5 of 5 steps done",
            "publish › upload: failed after 2 attempts", "publish: failed at 'upload'", "export: cancelled",
            // Batch updates: marked rows and a check against the data source.
            "[4/5] Batch updates", "+ triage issues", "- review PR #40", "~ fix bug #12 (urgent)", "↕ release 1.0",
            "moved from To do", "list matches the data source", "3 of 3 rounds committed",
            // Cross-thread: items and wake-ups.
            "[5/5] Cross-thread", "80,000 of 80,000 invokes from 4 threads", "the loop woke",
            "order kept for every thread: yes",
            "Tour complete: 5 of 5 parts",
        ]
        for fragment in expected {
            #expect(text.contains(fragment), "missing: \(fragment)")
        }
    }

    @Test func jsonOutputIsOneParsableObjectPerLine() throws {
        let (report, text) = try Self.runQuickTour(.json)
        #expect(report.completed == Self.partIDs)
        #expect(!text.contains("\u{1B}"))
        let objects = try Self.parseJSONLines(text)
        let started = objects.filter { $0["event"] as? String == "start" }.compactMap { $0["part"] as? String }
        #expect(started == ["tour"] + Self.partIDs)
        for part in Self.partIDs {
            #expect(objects.contains { $0["part"] as? String == part && $0["event"] as? String == "result" },
                    "no result event for \(part)")
        }
        let longest = objects.first { $0["longestIterationNs"] != nil }?["longestIterationNs"] as? Int
        #expect((longest ?? 0) > 0)
        let summary = try #require(objects.last)
        #expect(summary["event"] as? String == "summary")
        #expect(summary["completed"] as? [String] == Self.partIDs)
    }

    @Test func frameGateAllowsAtMostOneFramePerIterationAndSixtyASecond() {
        var gate = FrameGate()
        #expect(gate.mayDraw(iteration: 1, now: 1_000_000_000))
        gate.didDraw(iteration: 1, now: 1_000_000_000)
        // Same iteration: never, however late.
        #expect(!gate.mayDraw(iteration: 1, now: 2_000_000_000))
        // Next iteration, but sooner than 1/60 s: not yet, and the delay says how long to wait.
        #expect(!gate.mayDraw(iteration: 2, now: 1_010_000_000))
        #expect(gate.delay(now: 1_010_000_000) == FrameGate.minimumInterval - 10_000_000)
        #expect(gate.mayDraw(iteration: 2, now: 1_000_000_000 + FrameGate.minimumInterval))
    }

    @Test func progressBarShowsPercentCountThroughputAndTimeLeft() {
        let snapshot = ProgressSnapshot(fractionCompleted: 0.42, completedUnitCount: 420_000, totalUnitCount: 1_000_000,
                                        throughput: 512_000, estimatedTimeRemaining: .seconds(2))
        let plain = ProgressBar.line(label: "items", snapshot: snapshot, width: 10, unicode: false)
        #expect(plain == "items [####------] 42% — 420,000 of 1,000,000 items, about 2 s left · 512k items/s")
        #expect(ProgressBar.bar(1, width: 4, unicode: true) == "████")
    }

    // MARK: The built binary

    /// The LoopDemo executable built next to the test bundle, if any.
    static let demoBinary: String? = {
        guard let test = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") else { return nil }
        var directory = URL(fileURLWithPath: test).deletingLastPathComponent()
        if directory.lastPathComponent.hasSuffix(".xctest") { directory.deleteLastPathComponent() }
        let candidate = directory.appendingPathComponent("LoopDemo").path
        return FileManager.default.isExecutableFile(atPath: candidate) ? candidate : nil
    }()

    static let tmux: String? = ["/usr/bin/tmux", "/usr/local/bin/tmux", "/bin/tmux"]
        .first { FileManager.default.isExecutableFile(atPath: $0) }

    @Test(.enabled(if: demoBinary != nil, "the LoopDemo executable is not built next to the tests"))
    func commandLineWithoutATerminalPrintsPlainLinesAndJSON() throws {
        let binary = try #require(Self.demoBinary)
        let steps = try Self.run(binary, ["steps", "--json"])
        #expect(steps.status == 0)
        let objects = try Self.parseJSONLines(steps.output)
        #expect(objects.contains { $0["event"] as? String == "sequence" && $0["outcome"] as? String == "cancelled" })

        let process = try Self.run(binary, ["process", "--items", "20000", "--budget", "2", "--no-color"])
        #expect(process.status == 0)
        #expect(process.output.contains("budget mode (2 ms): 20,000 items"))
        #expect(!process.output.contains("\u{1B}"))

        let perItem = try Self.run(binary, ["process", "--items", "500", "--per-item"])
        #expect(perItem.output.contains("per-item mode: 500 items"))
        #expect(perItem.output.contains("501 iterations"))

        let diff = try Self.run(binary, ["diff"])
        #expect(diff.status == 0)
        #expect(diff.output.contains("3 of 3 rounds committed"))
    }

    @Test(.enabled(if: demoBinary != nil, "the LoopDemo executable is not built next to the tests"))
    func mainActorPartUpdatesItsViewModelInsideTheMainLoop() throws {
        let binary = try #require(Self.demoBinary)
        let run = try Self.run(binary, ["main-actor", "--items", "200000", "--json"])
        #expect(run.status == 0)
        let result = try #require(try Self.parseJSONLines(run.output).first { $0["event"] as? String == "result" })
        #expect(result["processed"] as? Int == 200_000)
        #expect((result["updates"] as? Int ?? 0) > 0)
        #expect(result["updatesOffTheLoop"] as? Int == 0)  // every @MainActor job ran inside the main loop

        let tour = try Self.run(binary, ["tour", "--quick", "--json"])
        #expect(tour.status == 0)
        let summary = try #require(try Self.parseJSONLines(tour.output).last)
        #expect(summary["completed"] as? [String] == Self.partIDs + ["main-actor"])
    }

    @Test(.enabled(if: demoBinary != nil, "the LoopDemo executable is not built next to the tests"),
          .enabled(if: tmux != nil, "tmux is not installed: the live terminal test needs it"))
    func liveBarsRedrawInPlaceAndCtrlCCancelsCleanly() throws {
        let binary = try #require(Self.demoBinary)
        let tmux = try #require(Self.tmux)
        // A private tmux server (its own socket), killed at the end with everything in it.
        let socket = "loopdemo-test-\(getpid())"
        let session = "demo"
        // The pane keeps its text after the demo exits (the shell waits in `sleep`).
        let command = "\(binary) process --items 5000000 --budget 4; echo EXIT=$?; sleep 60"
        // posix_spawn, not Foundation's Process: Process waits for the tmux server the client daemonizes.
        #expect(Self.spawnAndWait([tmux, "-L", socket, "new-session", "-d", "-s", session, "-x", "120", "-y", "40", command]) == 0)
        defer { _ = Self.spawnAndWait([tmux, "-L", socket, "kill-server"]) }
        func pane() throws -> String { try Self.run(tmux, ["-L", socket, "capture-pane", "-p", "-t", session]).output }

        // The live bar appears, with percent, count, throughput and time left, next to the spinner.
        let first = try Self.poll("a live bar with throughput and time left", pane) {
            $0.contains("█") && $0.contains("items/s") && $0.contains("left") && $0.contains("spinner frame")
        }
        // It redraws in place: later the percentage differs, and there is still exactly one bar line.
        let percent = Self.barLine(first)
        let later = try Self.poll("the bar to move", pane) { Self.barLine($0) != percent && Self.barLine($0) != nil }
        #expect(later.components(separatedBy: "\n").filter { $0.hasPrefix("items ") }.count == 1)

        // Ctrl-C cancels the part through the loop's signal handling and prints what completed.
        #expect(Self.spawnAndWait([tmux, "-L", socket, "send-keys", "-t", session, "C-c"]) == 0)
        let end = try Self.poll("the demo to exit after Ctrl-C", pane) { $0.contains("EXIT=") }
        #expect(end.contains("cancelling the current part"))
        #expect(end.contains("cancelled at"))
        #expect(end.contains("Interrupted after"))
        #expect(end.contains("Cancelled cleanly: Responsiveness"))
        #expect(end.contains("EXIT=130"))
    }

    // MARK: Helpers

    static func parseJSONLines(_ text: String) throws -> [[String: Any]] {
        try text.split(separator: "\n").map { line in
            let object = try JSONSerialization.jsonObject(with: Data(line.utf8))
            return try #require(object as? [String: Any], "not an object: \(line)")
        }
    }

    /// The bar line of a captured pane, if any.
    static func barLine(_ pane: String) -> String? {
        pane.components(separatedBy: "\n").first { $0.hasPrefix("items ") && $0.contains("%") }
    }

    /// Captures until `condition` holds, at most 150 times (about 15 s), 100 ms apart.
    static func poll(_ what: String, _ capture: () throws -> String, until condition: (String) -> Bool) throws -> String {
        var last = ""
        for _ in 0..<150 {
            last = try capture()
            if condition(last) { return last }
            // Paces the polling of another process's terminal (spinning would fork capture-pane
            // nonstop); the condition above, not this pause, is what the test waits for.
            usleep(100_000)
        }
        Issue.record("timed out waiting for \(what); the pane shows:\n\(last)")
        throw CancellationError()
    }

    /// Runs a program to its end (killed after 60 s), returning its exit status and stdout.
    static func run(_ program: String, _ arguments: [String]) throws -> (status: Int32, output: String) {
        let process = try ChildProcess(program, arguments)
        let pid = process.pid
        let watchdog = DispatchWorkItem { kill(pid, SIGKILL) }  // cancelled before the child is reaped
        DispatchQueue.global().asyncAfter(deadline: .now() + 60, execute: watchdog)
        let data = process.output?.readDataToEndOfFile() ?? Data()
        watchdog.cancel()
        return (process.waitUntilExit(), String(decoding: data, as: UTF8.self))
    }

    /// Runs `argv` with posix_spawn (stdout and stderr to /dev/null) and returns its exit status.
    ///
    /// The child gets an empty signal mask and default dispositions: test runner threads block most
    /// signals, and a tmux server (and the demo under it) would inherit that mask and never see Ctrl-C.
    static func spawnAndWait(_ argv: [String]) -> Int32 {
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var empty = sigset_t()
        sigemptyset(&empty)
        var defaults = sigset_t()
        sigfillset(&defaults)
        sigdelset(&defaults, SIGKILL)
        sigdelset(&defaults, SIGSTOP)
        posix_spawnattr_setsigmask(&attributes, &empty)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        var cArguments: [UnsafeMutablePointer<CChar>?] = argv.map { strdup($0) } + [nil]
        defer { for pointer in cArguments { free(pointer) } }
        var pid: pid_t = 0
        guard posix_spawn(&pid, argv[0], &actions, &attributes, &cArguments, environ) == 0 else { return -1 }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0, errno == EINTR {}
        return (status >> 8) & 0xFF
    }
}
