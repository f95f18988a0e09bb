import LoopKit

/// Renders a ``ProgressSnapshot`` as a bar and a line of text: percent, count, throughput, time left.
///
/// The counts, percentage and time left are ``ProgressSnapshot/description`` (TaskProgress's own
/// formatting); the throughput is ``ProgressSnapshot/throughput``.
public enum ProgressBar {
    /// A bar `width` cells wide: eighth blocks on a terminal, `#` and `-` elsewhere.
    public static func bar(_ fraction: Double, width: Int, unicode: Bool) -> String {
        let clamped = min(1, max(0, fraction.isFinite ? fraction : 0))
        if !unicode {
            let filled = Int((clamped * Double(width)).rounded(.down))
            return "[" + String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled) + "]"
        }
        let eighths = Int((clamped * Double(width * 8)).rounded(.down))
        let full = eighths / 8
        let partial = eighths % 8
        let blocks: [Character] = [" ", "▏", "▎", "▍", "▌", "▋", "▊", "▉"]
        var out = String(repeating: "█", count: full)
        if full < width {
            out.append(partial == 0 ? "░" : blocks[partial])
            out += String(repeating: "░", count: width - full - 1)
        }
        return out
    }

    /// "42% — 420,000 of 1,000,000 items, about 1 s left · 487k items/s"
    public static func summary(_ snapshot: ProgressSnapshot) -> String {
        var text = snapshot.description
        // A rate reads well for items, not for a handful of jobs.
        if let throughput = snapshot.throughput, throughput >= 10, !snapshot.isCancelled {
            text += " · \(formatRate(throughput)) \(snapshot.unitName.plural)/s"
        }
        return text
    }

    /// A full line: label, bar, summary.
    public static func line(label: String, snapshot: ProgressSnapshot, width: Int = 24, unicode: Bool) -> String {
        "\(label) \(bar(snapshot.fractionCompleted, width: width, unicode: unicode)) \(summary(snapshot))"
    }
}

/// Tracks which milestones (every `step` of the fraction) a plain or JSON progress report has printed.
struct Milestones: Sendable {
    let step: Double
    private var next: Double
    private var ended = false

    init(step: Double) {
        self.step = step
        next = step
    }

    /// Whether `snapshot` reached a new milestone (or ended) since the last report.
    mutating func shouldReport(_ snapshot: ProgressSnapshot) -> Bool {
        guard !ended else { return false }
        if snapshot.isFinished || snapshot.isCancelled {
            ended = true
            return true
        }
        guard snapshot.fractionCompleted + 1e-9 >= next, snapshot.fractionCompleted < 1 else { return false }
        while next <= snapshot.fractionCompleted + 1e-9 { next += step }
        return true
    }
}
