import LoopKit

/// Three step sequences on a worker: one that succeeds after a step is retried, one whose step fails for
/// good, and one that is cancelled while a step runs. Each step's status is shown as it changes.
public struct StepsPart: TourPart {
    public let id = "steps"
    public let title = "Step sequence"
    public let settings: TourSettings

    public init(settings: TourSettings) { self.settings = settings }

    public var blurb: String {
        "StepSequence runs steps on a worker loop; the flow, retries and handlers run on this loop."
    }

    /// A simulated step: how long it takes, how many of its first attempts fail, how many it may make.
    struct Plan: Sendable {
        let name: String
        let milliseconds: Int
        var failures = 0
        var attempts = 1
    }

    /// A sequence to run, and when to cancel it (after its step of that index starts).
    struct Sequence: Sendable {
        let name: String
        let steps: [Plan]
        var cancelDuring: Int?
    }

    static let sequences: [Sequence] = [
        Sequence(name: "install", steps: [
            Plan(name: "resolve", milliseconds: 120),
            Plan(name: "fetch manifest", milliseconds: 150, failures: 1, attempts: 3),
            Plan(name: "download", milliseconds: 250),
            Plan(name: "verify", milliseconds: 100),
            Plan(name: "link", milliseconds: 80),
        ]),
        Sequence(name: "publish", steps: [
            Plan(name: "package", milliseconds: 150),
            Plan(name: "upload", milliseconds: 120, failures: 9, attempts: 2),
            Plan(name: "announce", milliseconds: 50),
        ]),
        Sequence(name: "export", steps: [
            Plan(name: "snapshot", milliseconds: 150),
            Plan(name: "export 10,000 rows", milliseconds: 2_000),
            Plan(name: "compress", milliseconds: 200),
        ], cancelDuring: 1),
    ]

    /// The status of one step, as the loop last heard it.
    enum Status {
        case waiting
        case running(attempt: Int, since: UInt64)
        case retrying(attempt: Int, error: String)
        case done(attempts: Int, nanoseconds: UInt64)
        case failed(attempts: Int, error: String)
        case cancelled
        case skipped
    }

    /// The board of statuses; lives on the loop (in a ``LoopBound``).
    struct Board {
        var statuses: [[Status]]
        var outcomes: [String?]
    }

    public func run(_ context: PartContext) throws -> PartOutcome {
        let loop = context.loop
        let out = context.output
        let id = self.id
        let settings = self.settings
        let sequences = Self.sequences
        let workers = try LoopGroup(threads: 1, name: "demo-steps")
        defer { workers.shutdown() }
        let worker = workers.next()
        let board = LoopBound(Board(statuses: sequences.map { $0.steps.map { _ in Status.waiting } },
                                    outcomes: sequences.map { _ in nil }), on: loop)

        /// Shows a change: a line in plain/JSON mode, the board in live mode.
        @Sendable func update(_ s: Int, _ step: Int, _ status: Status) {
            board.value.statuses[s][step] = status
            let name = "\(sequences[s].name) › \(sequences[s].steps[step].name)"
            if let text = Self.lineText(status, out: out, now: now()) {
                out.line("  \(name): \(text)", part: id, event: "step",
                         fields: [("sequence", .string(sequences[s].name)), ("step", .string(sequences[s].steps[step].name)),
                                  ("status", .string(Self.statusName(status)))])
            }
            redraw()
        }
        @Sendable func redraw() {
            guard out.isLive else { return }
            let b = board.value
            for (s, sequence) in sequences.enumerated() {
                let steps = sequence.steps.enumerated().map { index, plan in
                    "\(Self.symbol(b.statuses[s][index], out: out)) \(plan.name)"
                }
                out.setLive("seq\(s)", "  \(out.bold(sequence.name.padding(to: 8))) \(steps.joined(separator: "  "))"
                            + (b.outcomes[s].map { "  → \($0)" } ?? ""))
            }
        }

        var running: [RunningSequence<Void>] = []
        let outcomeNames = Shared(sequences.map { _ in "unfinished" })
        let finished = Counter()
        for (s, sequence) in sequences.enumerated() {
            var builder = StepSequence(on: loop, target: worker)
            for (index, plan) in sequence.steps.enumerated() {
                let attempts = Counter()
                builder = builder.thenCallback(plan.name, retry: .attempts(plan.attempts, backoff: settings.paced(100))) {
                    (_: Void, done: StepCallback<Void>) in
                    // On the worker: report the start to the loop, then finish after the simulated time.
                    let attempt = attempts.add()
                    let started = now()
                    try? loop.invoke { update(s, index, .running(attempt: attempt, since: started)) }
                    let timer = try? worker.schedule(after: settings.paced(plan.milliseconds)) {
                        if attempt <= plan.failures {
                            let error = "503 service unavailable"
                            if attempt < plan.attempts {
                                try? loop.invoke { update(s, index, .retrying(attempt: attempt, error: error)) }
                            }
                            done.fail(DemoError(error))
                        } else {
                            let elapsed = now() - started
                            try? loop.invoke { update(s, index, .done(attempts: attempt, nanoseconds: elapsed)) }
                            done.succeed()
                        }
                    }
                    done.onCancel { timer?.cancel() }
                }
            }
            let run = builder
                .onError { error in
                    update(s, error.stepIndex, .failed(attempts: error.attempts, error: "\(error.underlyingError.map { "\($0)" } ?? error.description)"))
                }
                .finally { outcome in
                    let text: String
                    switch outcome {
                    case .succeeded: text = out.green("succeeded")
                    case .failed(let error): text = out.red("failed at '\(error.stepName)'")
                    case .cancelled: text = out.yellow("cancelled")
                    }
                    outcomeNames.withLock { $0[s] = Self.outcomeName(outcome) }
                    board.withValue { b in
                        b.outcomes[s] = text
                        for (index, status) in b.statuses[s].enumerated() {
                            if case .running = status, case .cancelled = outcome { b.statuses[s][index] = .cancelled }
                            if case .waiting = status { b.statuses[s][index] = .skipped }
                        }
                    }
                    let done = board.value.statuses[s].filter { if case .done = $0 { true } else { false } }.count
                    out.line("  \(sequence.name): \(text) — \(done) of \(sequence.steps.count) steps done", part: id, event: "sequence",
                             fields: [("sequence", .string(sequence.name)), ("outcome", .string(Self.outcomeName(outcome))),
                                      ("stepsDone", .number(done))])
                    redraw()
                    if finished.add() == sequences.count { loop.stop() }
                }
                .start()
            running.append(run)
            if let cancelDuring = sequence.cancelDuring {
                let cancelAfter = UInt64(250_000_000 * settings.pace)
                // Cancel once that step has run for a while: the callback step's timer is cancelled with it.
                @Sendable func watchForStep() {
                    if case .running(_, let since) = board.value.statuses[s][cancelDuring], now() - since > cancelAfter {
                        out.line("  \(sequence.name): cancelling while '\(sequence.steps[cancelDuring].name)' runs", part: id, event: "cancel")
                        run.cancel()
                    } else if !run.isFinished {
                        _ = try? loop.schedule(after: .milliseconds(10), watchForStep)
                    }
                }
                try loop.schedule(after: .milliseconds(10), watchForStep)
            }
        }
        let all = running
        context.onCancel { for run in all { run.cancel() } }
        redraw()
        try loop.run()
        let b = board.value
        let names = b.outcomes.map { $0 ?? "?" }
        out.line("  \(sequences.count) sequences: " + zip(sequences, names).map { "\($0.name) \($1)" }.joined(separator: ", ")
                 + "; every error and finally handler ran once, on this loop", part: id, event: "result",
                 fields: [("sequences", .object(zip(sequences, outcomeNames.value).map { ($0.name, .string($1)) }))])
        let outcome: PartOutcome = context.isCancelled ? .cancelled : .completed
        if out.isLive {
            // Keep the final board on screen.
            out.clearLive()
            for (s, sequence) in sequences.enumerated() {
                let steps = sequence.steps.enumerated().map { "\(Self.symbol(b.statuses[s][$0], out: out)) \($1.name)" }
                out.line("  \(out.bold(sequence.name.padding(to: 8))) \(steps.joined(separator: "  "))", part: id, event: "board")
            }
        }
        return outcome
    }

    static func lineText(_ status: Status, out: DemoOutput, now: UInt64) -> String? {
        switch status {
        case .waiting, .skipped: nil
        case .running(let attempt, _): attempt == 1 ? "running" : "running (attempt \(attempt))"
        case .retrying(let attempt, let error): out.yellow("attempt \(attempt) failed (\(error)), retried")
        case .done(let attempts, let ns): out.green("done") + " in \(formatNanoseconds(ns))" + (attempts > 1 ? " on attempt \(attempts)" : "")
        case .failed(let attempts, let error): out.red("failed") + " after \(attempts) attempt\(attempts == 1 ? "" : "s"): \(error)"
        case .cancelled: out.yellow("cancelled")
        }
    }

    static func symbol(_ status: Status, out: DemoOutput) -> String {
        switch status {
        case .waiting: out.dim("·")
        case .running: out.cyan("▶")
        case .retrying: out.yellow("↻")
        case .done: out.green("✓")
        case .failed: out.red("✗")
        case .cancelled: out.yellow("⊘")
        case .skipped: out.dim("–")
        }
    }

    static func statusName(_ status: Status) -> String {
        switch status {
        case .waiting: "waiting"
        case .running: "running"
        case .retrying: "retried"
        case .done: "done"
        case .failed: "failed"
        case .cancelled: "cancelled"
        case .skipped: "skipped"
        }
    }

    static func outcomeName<T>(_ outcome: StepOutcome<T>) -> String {
        switch outcome {
        case .succeeded: "succeeded"
        case .failed: "failed"
        case .cancelled: "cancelled"
        }
    }
}
