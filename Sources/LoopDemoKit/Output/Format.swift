// Number and duration formatting for the tour, without Foundation.

/// Formats 1234567 as "1,234,567".
public func grouped(_ value: some BinaryInteger) -> String {
    let digits = Array(String(value.magnitude))
    var out = value < 0 ? "-" : ""
    for (index, digit) in digits.enumerated() {
        if index > 0, (digits.count - index) % 3 == 0 { out.append(",") }
        out.append(digit)
    }
    return out
}

/// Formats nanoseconds as "450 ns", "12.3 µs", "4.56 ms" or "2.05 s" (three significant digits).
public func formatNanoseconds(_ ns: UInt64) -> String {
    switch ns {
    case ..<1_000: "\(ns) ns"
    case ..<1_000_000: "\(significant(Double(ns) / 1e3)) µs"
    case ..<1_000_000_000: "\(significant(Double(ns) / 1e6)) ms"
    default: "\(significant(Double(ns) / 1e9)) s"
    }
}

/// Formats a rate such as 487312.4 as "487k"; 12_345_678 as "12.3M"; 950 as "950".
public func formatRate(_ perSecond: Double) -> String {
    guard perSecond.isFinite, perSecond >= 0 else { return "?" }
    switch perSecond {
    case ..<1_000: return "\(Int(perSecond.rounded()))"
    case ..<1_000_000: return "\(significant(perSecond / 1e3))k"
    case ..<1_000_000_000: return "\(significant(perSecond / 1e6))M"
    default: return "\(significant(perSecond / 1e9))G"
    }
}

/// Three significant digits: 4.56, 45.6, 456.
func significant(_ value: Double) -> String {
    if value >= 100 { return "\(Int(value.rounded()))" }
    let decimals = value >= 10 ? 1 : 2
    var text = fixed(value, decimals: decimals)
    while text.hasSuffix("0") { text.removeLast() }
    if text.hasSuffix(".") { text.removeLast() }
    return text
}

/// `value` with exactly `decimals` digits after the point.
public func fixed(_ value: Double, decimals: Int) -> String {
    guard value.isFinite else { return "?" }
    var scale = 1.0
    for _ in 0..<decimals { scale *= 10 }
    let scaled = Int64((abs(value) * scale).rounded())
    let whole = scaled / Int64(scale)
    var fraction = String(scaled % Int64(scale))
    while fraction.count < decimals { fraction = "0" + fraction }
    let sign = value < 0 && scaled != 0 ? "-" : ""
    return decimals == 0 ? "\(sign)\(whole)" : "\(sign)\(whole).\(fraction)"
}

/// Items per second for `count` items in `nanoseconds`.
public func rate(_ count: Int, in nanoseconds: UInt64) -> Double {
    Double(count) / (Double(max(nanoseconds, 1)) / 1e9)
}
