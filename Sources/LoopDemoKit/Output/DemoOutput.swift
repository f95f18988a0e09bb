import LoopKit

/// Everything the tour prints goes through here, in one of three modes (see ``OutputMode``).
///
/// - **Live** (a terminal): permanent lines scroll up; below them a *live region* (bars, spinners, a
///   list) is redrawn in place, at most once per loop iteration and at most 60 times a second
///   (``FrameGate``), from a timer on the loop.
/// - **Plain** (no terminal): permanent lines only; progress prints at milestones. No escape codes.
/// - **JSON** (`--json`): one object per line: `{"part":…,"event":…,"message":…, fields…}`.
///
/// Call on the loop thread once ``attach(to:)`` has been called; before that, from one thread at a time.
/// The class is `Sendable` (its state is under a ``Lock``) so loop callbacks can capture it.
public final class DemoOutput: Sendable {
    public let options: OutputOptions
    private let sink: @Sendable (String) -> Void
    private let clock = SystemLoopClock()
    private let state = Lock(State())

    private struct State {
        var loop: EventLoop?
        /// The live region: keys in display order, and their lines.
        var liveOrder: [String] = []
        var live: [String: String] = [:]
        /// Lines of the live region currently on screen.
        var drawnLines = 0
        var framePending = false
        var gate = FrameGate()
        var milestones: [String: Milestones] = [:]
    }

    /// - Parameters:
    ///   - options: The mode, colours and width.
    ///   - sink: Receives the text to write (stdout by default; tests capture it).
    public init(options: OutputOptions, sink: @escaping @Sendable (String) -> Void = writeToStandardOutput) {
        self.options = options
        self.sink = sink
    }

    public var mode: OutputMode { options.mode }
    public var isLive: Bool { options.mode == .live }

    /// Frames drawn so far (live mode).
    public var framesDrawn: Int { state.withLock { $0.gate.frames } }

    /// Binds the output to the loop whose timer redraws the live region.
    public func attach(to loop: EventLoop) {
        state.withLock { $0.loop = loop }
        if isLive { sink(ANSI.hideCursor) }
    }

    // MARK: Permanent lines

    /// Prints a line that stays (above the live region on a terminal), as a JSON object in JSON mode.
    ///
    /// - Parameters:
    ///   - text: The human-readable line (may use ``bold(_:)`` and the colour helpers).
    ///   - part: The part's identifier, for JSON.
    ///   - event: What the line reports, for JSON ("start", "result", "status", …).
    ///   - fields: Machine-readable fields, for JSON.
    public func line(_ text: String, part: String, event: String, fields: [(String, JSONValue)] = []) {
        switch options.mode {
        case .json:
            let object: [(String, JSONValue)] = [("part", .string(part)), ("event", .string(event)),
                                                 ("message", .string(text))] + fields
            sink(JSONValue.object(object).encoded + "\n")
        case .plain:
            sink(text + "\n")
        case .live:
            state.withLock { s in
                sink(eraseRegion(&s) + text + "\n")
                if !s.liveOrder.isEmpty { scheduleFrame(&s) }
            }
        }
    }

    /// An empty line (nothing in JSON mode).
    public func blank() {
        guard options.mode != .json else { return }
        line("", part: "", event: "")
    }

    /// A JSON-only event (nothing in the other modes).
    public func event(part: String, event: String, fields: [(String, JSONValue)]) {
        guard options.mode == .json else { return }
        let object: [(String, JSONValue)] = [("part", .string(part)), ("event", .string(event))] + fields
        sink(JSONValue.object(object).encoded + "\n")
    }

    // MARK: The live region

    /// Sets one line of the live region (live mode; ignored otherwise). The frame timer draws it.
    public func setLive(_ key: String, _ text: String) {
        guard isLive else { return }
        state.withLock { s in
            if s.live.updateValue(text, forKey: key) == nil { s.liveOrder.append(key) }
            scheduleFrame(&s)
        }
    }

    /// Removes every line of the live region and erases it from the screen.
    public func clearLive() {
        guard isLive else { return }
        state.withLock { s in
            sink(eraseRegion(&s))
            s.liveOrder = []
            s.live = [:]
        }
    }

    /// Restores the cursor at the end of the run (live mode).
    public func finish() {
        clearLive()
        if isLive { sink(ANSI.showCursor) }
    }

    /// Prints a bar as a permanent line (live mode): the final state of a bar once its live line goes.
    public func keepBar(label: String, snapshot: ProgressSnapshot) {
        guard isLive else { return }
        line(ProgressBar.line(label: bold(label), snapshot: snapshot, unicode: true), part: "", event: "")
    }

    /// Reports a progress snapshot: a bar in the live region, a plain line at each `plainStep` milestone,
    /// a JSON `progress` event at each `jsonStep` milestone. Finished and cancelled are always reported.
    public func progress(part: String, key: String, label: String, snapshot: ProgressSnapshot,
                         plainStep: Double = 0.25, jsonStep: Double = 0.1) {
        switch options.mode {
        case .live:
            setLive(key, ProgressBar.line(label: bold(label), snapshot: snapshot, unicode: true))
        case .plain:
            guard state.withLock({ $0.milestones.shouldReport(key, snapshot, step: plainStep) }) else { return }
            line("\(label) \(ProgressBar.line(label: "", snapshot: snapshot, width: 20, unicode: false).dropFirst())",
                 part: part, event: "progress")
        case .json:
            guard state.withLock({ $0.milestones.shouldReport(key, snapshot, step: jsonStep) }) else { return }
            event(part: part, event: "progress", fields: [
                ("label", .string(label)),
                ("done", .number(snapshot.completedUnitCount)), ("total", .number(snapshot.totalUnitCount)),
                ("fraction", .double(snapshot.fractionCompleted)),
                ("throughput", .number(snapshot.throughput)),
                ("secondsLeft", .number(snapshot.estimatedTimeRemaining.map(seconds))),
                ("finished", .bool(snapshot.isFinished)), ("cancelled", .bool(snapshot.isCancelled)),
            ])
        }
    }

    // MARK: Style (live mode with colour only)

    public func bold(_ text: String) -> String { style(text, "1") }
    public func dim(_ text: String) -> String { style(text, "2") }
    public func green(_ text: String) -> String { style(text, "32") }
    public func red(_ text: String) -> String { style(text, "31") }
    public func yellow(_ text: String) -> String { style(text, "33") }
    public func cyan(_ text: String) -> String { style(text, "36") }

    private func style(_ text: String, _ code: String) -> String {
        options.color ? "\(ANSI.escape)\(code)m\(text)\(ANSI.reset)" : text
    }

    // MARK: Drawing

    /// Arms the frame timer unless a frame is already pending: at the earliest in the next iteration, and
    /// no sooner than 1/60 s after the previous frame.
    private func scheduleFrame(_ s: inout State) {
        guard !s.framePending, let loop = s.loop, loop.isAcceptingWork else { return }
        s.framePending = true
        let delay = s.gate.delay(now: clock.nanoseconds())
        do {
            try loop.schedule(after: .nanoseconds(Int64(delay))) { [self] in drawFrame() }
        } catch {
            s.framePending = false
        }
    }

    /// The frame timer: redraws the live region if the gate allows, otherwise tries again later.
    private func drawFrame() {
        state.withLock { s in
            s.framePending = false
            guard let loop = s.loop else { return }
            let now = clock.nanoseconds()
            guard s.gate.mayDraw(iteration: loop.iteration, now: now) else {
                scheduleFrame(&s)
                return
            }
            s.gate.didDraw(iteration: loop.iteration, now: now)
            var frame = eraseRegion(&s)
            for key in s.liveOrder {
                frame += ANSI.truncate(s.live[key] ?? "", to: max(20, options.width - 1)) + "\n"
            }
            s.drawnLines = s.liveOrder.count
            sink(frame)
        }
    }

    /// Moves to the top of the live region and clears it: the cursor ends where the region began.
    private func eraseRegion(_ s: inout State) -> String {
        guard s.drawnLines > 0 else { return "" }
        defer { s.drawnLines = 0 }
        return ANSI.up(s.drawnLines) + "\r" + ANSI.clearBelow
    }
}

extension [String: Milestones] {
    mutating func shouldReport(_ key: String, _ snapshot: ProgressSnapshot, step: Double) -> Bool {
        self[key, default: Milestones(step: step)].shouldReport(snapshot)
    }
}

/// A duration in seconds.
func seconds(_ duration: Duration) -> Double {
    let (whole, attoseconds) = duration.components
    return Double(whole) + Double(attoseconds) / 1e18
}
