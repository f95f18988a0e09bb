import LoopKit

extension ProgressSnapshot {
    /// The snapshot as one line of JSON, the data of ``HTTPServerResponse/progressEvents(_:keepAlive:)``'s
    /// events: `fraction` (0…1), `completed`, `total` (negative when unknown), `indeterminate`, `finished`,
    /// `cancelled`, `paused`, `throughput` (units per second) and `remainingSeconds` (null when unknown), and
    /// `description` (``description``, such as "42% — 420 of 1,000 items, about 3 s left").
    ///
    /// A value: safe from any thread.
    public var jsonObject: String {
        func number(_ value: Double?) -> String {
            guard let value, value.isFinite else { return "null" }
            return String(value)
        }
        let remaining = estimatedTimeRemaining.map {
            Double($0.components.seconds) + Double($0.components.attoseconds) / 1e18
        }
        return "{\"fraction\":\(number(fractionCompleted)),\"completed\":\(completedUnitCount),"
            + "\"total\":\(totalUnitCount),\"indeterminate\":\(isIndeterminate),\"finished\":\(isFinished),"
            + "\"cancelled\":\(isCancelled),\"paused\":\(isPaused),\"throughput\":\(number(throughput)),"
            + "\"remainingSeconds\":\(number(remaining)),\"description\":\(JSONString(description))}"
    }
}

/// `text` as a JSON string literal, quotes included: `"`, `\` and control characters escaped.
func JSONString(_ text: String) -> String {
    var out = "\""
    for scalar in text.unicodeScalars {
        switch scalar {
        case "\"": out += "\\\""
        case "\\": out += "\\\\"
        case "\n": out += "\\n"
        case "\r": out += "\\r"
        case "\t": out += "\\t"
        case _ where scalar.value < 0x20:
            let hex = String(scalar.value, radix: 16)
            out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
        default: out.unicodeScalars.append(scalar)
        }
    }
    return out + "\""
}
