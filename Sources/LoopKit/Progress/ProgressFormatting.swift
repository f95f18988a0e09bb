// English descriptions of progress, without Foundation: "42% — 420 of 1,000 items, about 3 s left".

/// Formats snapshots, counts and durations for ``ProgressSnapshot/description``.
enum ProgressFormatting {
    /// The description of a snapshot.
    ///
    /// - cancelled: "cancelled — 420 of 1,000 items"
    /// - indeterminate: "indeterminate — 420 items" (or "… — 420 of 1,000 items" when the total is known)
    /// - otherwise: "42% — 420 of 1,000 items", then ", paused" or ", about 3 s left" when known.
    static func describe(_ s: ProgressSnapshot) -> String {
        let counts: String
        if s.totalUnitCount < 0 {
            counts = "\(grouped(s.completedUnitCount)) \(s.unitName.agreeing(with: s.completedUnitCount))"
        } else {
            counts = "\(grouped(s.completedUnitCount)) of \(grouped(s.totalUnitCount)) "
                + s.unitName.agreeing(with: s.totalUnitCount)
        }
        if s.isCancelled { return "cancelled — " + counts }
        if s.isIndeterminate { return "indeterminate — " + counts }
        var text = "\(percent(s.fractionCompleted, finished: s.isFinished))% — " + counts
        if s.isPaused {
            text += ", paused"
        } else if !s.isFinished, let left = s.estimatedTimeRemaining {
            text += ", about \(duration(left)) left"
        }
        return text
    }

    /// The whole percentage, rounded down so that only a finished progress shows 100.
    static func percent(_ fraction: Double, finished: Bool) -> Int {
        if finished { return 100 }
        // The epsilon absorbs binary rounding: 0.29 * 100 is 28.999999999999996.
        let value = Int((min(1, max(0, fraction)) * 100 + 1e-9).rounded(.down))
        return min(value, 99)
    }

    /// `1234567` → "1,234,567".
    static func grouped(_ value: Int64) -> String {
        let digits = Array(String(value.magnitude))
        var out = value < 0 ? "-" : ""
        out.reserveCapacity(digits.count + digits.count / 3 + 1)
        for (index, digit) in digits.enumerated() {
            if index > 0 && (digits.count - index) % 3 == 0 { out.append(",") }
            out.append(digit)
        }
        return out
    }

    /// "3 s", "2 min", "1 h 5 min": seconds under a minute, minutes under an hour, then hours and minutes.
    static func duration(_ d: Duration) -> String {
        let (secondsPart, attoseconds) = d.components
        let total = max(0, Double(secondsPart) + Double(attoseconds) / 1e18)
        if total < 59.5 {
            return "\(max(1, Int(total.rounded()))) s"
        }
        let minutes = Int((total / 60).rounded())
        if minutes < 60 {
            return "\(minutes) min"
        }
        let hours = minutes / 60
        let rest = minutes % 60
        return rest == 0 ? "\(grouped(Int64(hours))) h" : "\(grouped(Int64(hours))) h \(rest) min"
    }
}
