#if canImport(Glibc)
import Glibc
#endif
import LoopKit

/// Runs parts one after another on one loop, on the calling thread.
///
/// **Ctrl-C** (SIGINT, through ``EventLoop/onSignal(_:_:)``): the running part is cancelled gracefully
/// and reports what it completed; the tour then ends (the remaining parts are listed as not run) and the
/// command exits with status 130. A second Ctrl-C while the part winds down exits at once.
public struct Tour: Sendable {
    public let parts: [any TourPart]
    public let settings: TourSettings
    public let output: DemoOutput
    /// Whether to handle SIGINT (off in tests that run the tour in-process).
    public let handlesInterrupts: Bool
    /// The loop to run on (``LoopKit/EventLoop/main`` in `LoopDemo`); nil: a new loop of the calling thread.
    public let loop: EventLoop?

    public init(parts: [any TourPart], settings: TourSettings, output: DemoOutput, handlesInterrupts: Bool = true,
                loop: EventLoop? = nil) {
        self.parts = parts
        self.settings = settings
        self.output = output
        self.handlesInterrupts = handlesInterrupts
        self.loop = loop
    }

    /// The six parts of the tour, sized by `settings`.
    public static func standardParts(_ settings: TourSettings) -> [any TourPart] {
        [
            ResponsivenessPart(settings: settings),
            ProgressTreePart(settings: settings),
            StepsPart(settings: settings),
            BatchUpdatesPart(settings: settings),
            CrossThreadPart(settings: settings),
            MainActorPart(settings: settings),
        ]
    }

    /// What happened.
    public struct Report: Sendable {
        public var completed: [String] = []
        public var cancelled: String?
        public var notRun: [String] = []
        public var elapsedNanoseconds: UInt64 = 0
        public var interrupted: Bool { cancelled != nil || !notRun.isEmpty }
    }

    /// Runs every part. Call on the loop's thread (the main thread in the demo).
    public func run() throws -> Report {
        let loop = try self.loop ?? EventLoop()
        let out = output
        out.attach(to: loop)
        defer {
            out.finish()
            loop.shutdown()
            _ = try? loop.runOnce(blocking: false)
        }
        let current = Shared<PartContext?>(nil)
        let interrupts = Counter()
        var signalWatch: Watch?
        if handlesInterrupts {
            // A parent may have left SIGINT blocked (the mask is inherited); threads started later inherit ours.
            var interrupt = sigset_t()
            sigemptyset(&interrupt)
            sigaddset(&interrupt, SIGINT)
            pthread_sigmask(SIG_UNBLOCK, &interrupt, nil)
            signalWatch = try loop.onSignal(SIGINT) {
                let count = interrupts.add()
                if count == 1 {
                    out.line(out.yellow("^C — cancelling the current part (Ctrl-C again to quit at once)"),
                             part: "tour", event: "interrupt")
                    current.value?.cancel()
                } else {
                    out.finish()
                    exit(130)
                }
            }
        }
        defer { signalWatch?.cancel() }

        let start = now()
        var report = Report()
        if parts.count > 1 {
            out.line(out.bold("LoopKit tour") + " — libevent \(EventLoop.libeventVersion) (\(loop.backend)), "
                     + "\(parts.count) parts. Ctrl-C cancels the running part and ends the tour.",
                     part: "tour", event: "start",
                     fields: [("libevent", .string(EventLoop.libeventVersion)), ("backend", .string(loop.backend)),
                              ("parts", .array(parts.map { .string($0.id) }))])
        }
        for (index, part) in parts.enumerated() {
            if interrupts.value > 0 {
                report.notRun.append(part.id)
                continue
            }
            let numbering = parts.count > 1 ? "[\(index + 1)/\(parts.count)] " : ""
            out.blank()
            out.line(out.bold(out.cyan("\(numbering)\(part.title)")) + " — " + part.blurb,
                     part: part.id, event: "start", fields: [("title", .string(part.title))])
            let context = PartContext(loop: loop, output: out, settings: settings)
            current.value = context
            let outcome = try part.run(context)
            current.value = nil
            out.clearLive()
            switch outcome {
            case .completed: report.completed.append(part.id)
            case .cancelled: report.cancelled = part.id
            }
        }
        report.elapsedNanoseconds = now() - start
        summarize(report)
        return report
    }

    private func summarize(_ report: Report) {
        let out = output
        let titles = Dictionary(uniqueKeysWithValues: parts.map { ($0.id, $0.title) })
        func names(_ ids: [String]) -> String { ids.isEmpty ? "none" : ids.map { titles[$0] ?? $0 }.joined(separator: ", ") }
        let fields: [(String, JSONValue)] = [
            ("completed", .array(report.completed.map { .string($0) })),
            ("cancelled", report.cancelled.map { .string($0) } ?? .null),
            ("notRun", .array(report.notRun.map { .string($0) })),
            ("seconds", .double(Double(report.elapsedNanoseconds) / 1e9)),
        ]
        out.blank()
        if report.interrupted {
            var text = out.yellow("Interrupted") + " after \(formatNanoseconds(report.elapsedNanoseconds)). "
                + "Completed: \(names(report.completed))."
            if let cancelled = report.cancelled { text += " Cancelled cleanly: \(names([cancelled]))." }
            if !report.notRun.isEmpty { text += " Not run: \(names(report.notRun))." }
            out.line(text, part: "tour", event: "summary", fields: fields)
        } else if parts.count > 1 {
            out.line(out.green("Tour complete") + ": \(report.completed.count) of \(parts.count) parts in "
                     + "\(formatNanoseconds(report.elapsedNanoseconds)).", part: "tour", event: "summary", fields: fields)
        } else {
            out.event(part: "tour", event: "summary", fields: fields)
        }
    }
}
