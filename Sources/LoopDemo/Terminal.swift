#if canImport(Glibc)
import Glibc
#endif

/// Where the demo writes: a live, redrawn status line on a terminal; plain lines anywhere else.
struct Terminal {
    /// Whether stdout is a terminal (and colour/redraw escapes are welcome).
    let isInteractive: Bool

    init() {
        isInteractive = isatty(STDOUT_FILENO) == 1 && getenv("NO_COLOR") == nil
    }

    /// Replaces the status line in place (terminal only).
    func redraw(_ line: String) {
        guard isInteractive else { return }
        print("\r\u{1B}[2K" + line, terminator: "")
        fflush(nil)  // all streams: Swift 6 rejects the global `stdout`
    }

    /// Prints a line that stays: on a terminal it first clears the status line.
    func say(_ line: String) {
        if isInteractive { print("\r\u{1B}[2K", terminator: "") }
        print(line)
        fflush(nil)  // all streams: Swift 6 rejects the global `stdout`
    }

    /// Bold text on a terminal, plain text elsewhere.
    func bold(_ text: String) -> String { isInteractive ? "\u{1B}[1m\(text)\u{1B}[0m" : text }
}

/// Formats 1234567 as "1,234,567".
func grouped(_ value: some BinaryInteger) -> String {
    let digits = String(value)
    var out = ""
    for (index, character) in digits.enumerated() {
        if index > 0, (digits.count - index) % 3 == 0, character != "-" { out.append(",") }
        out.append(character)
    }
    return out
}

/// Formats nanoseconds as "12.3 ms" or "450 ns".
func formatNanoseconds(_ ns: UInt64) -> String {
    switch ns {
    case ..<10_000: "\(ns) ns"
    case ..<10_000_000: "\(ns / 1_000) µs"
    default: "\(ns / 1_000_000) ms"
    }
}
