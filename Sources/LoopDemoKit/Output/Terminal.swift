#if canImport(Glibc)
import Glibc
#endif

/// How the demo writes: a live, redrawn region on a terminal; plain lines on a pipe; JSON lines on request.
public enum OutputMode: String, Sendable {
    /// A terminal: bars and spinners redraw in place (ANSI escape codes).
    case live
    /// Not a terminal (a pipe, a file, CI): plain lines, no escape codes.
    case plain
    /// `--json`: one JSON object per line, no escape codes.
    case json
}

/// The output settings the command line chose.
public struct OutputOptions: Sendable {
    public var mode: OutputMode
    /// Colours and bold (live mode only; `--no-color` and `NO_COLOR` turn them off).
    public var color: Bool
    /// The terminal's width in columns (live mode); lines are cut to fit.
    public var width: Int

    public init(mode: OutputMode, color: Bool, width: Int = 100) {
        self.mode = mode
        self.color = color && mode == .live
        self.width = width
    }

    /// Live when stdout is a terminal (and `TERM` is not `dumb`), plain otherwise, JSON on request.
    public static func detect(json: Bool, noColor: Bool) -> OutputOptions {
        if json { return OutputOptions(mode: .json, color: false) }
        let isTerminal = isatty(STDOUT_FILENO) == 1 && (getenv("TERM").map { String(cString: $0) } ?? "dumb") != "dumb"
        guard isTerminal else { return OutputOptions(mode: .plain, color: false) }
        let wantsColor = !noColor && getenv("NO_COLOR") == nil
        return OutputOptions(mode: .live, color: wantsColor, width: terminalWidth())
    }

    /// The width of the terminal on stdout, or 100.
    static func terminalWidth() -> Int {
        var size = winsize()
        guard ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 20 else { return 100 }
        return Int(size.ws_col)
    }
}

/// Writes text to stdout, unbuffered (one `write` per call), so frames are never torn by stdio buffering.
public func writeToStandardOutput(_ text: String) {
    var text = text
    text.withUTF8 { buffer in
        var offset = 0
        while offset < buffer.count {
            let written = write(STDOUT_FILENO, buffer.baseAddress! + offset, buffer.count - offset)
            if written < 0 {
                if errno == EINTR { continue }
                return
            }
            offset += written
        }
    }
}

/// ANSI escape sequences, used in live mode only.
enum ANSI {
    static let escape = "\u{1B}["
    static func up(_ lines: Int) -> String { "\(escape)\(lines)A" }
    static let clearLine = "\(escape)2K"
    static let clearBelow = "\(escape)J"
    static let hideCursor = "\(escape)?25l"
    static let showCursor = "\(escape)?25h"
    static let reset = "\(escape)0m"

    /// The number of columns `text` occupies, skipping escape sequences.
    static func visibleWidth(_ text: String) -> Int {
        var width = 0
        var inEscape = false
        for scalar in text.unicodeScalars {
            if inEscape {
                if (0x40...0x7E).contains(scalar.value), scalar != "[" { inEscape = false }
            } else if scalar == "\u{1B}" {
                inEscape = true
            } else {
                width += 1
            }
        }
        return width
    }

    /// `text` cut to `columns` visible columns, escape sequences kept (and colours reset when cut).
    static func truncate(_ text: String, to columns: Int) -> String {
        guard visibleWidth(text) > columns else { return text }
        var out = ""
        var width = 0
        var inEscape = false
        for scalar in text.unicodeScalars {
            if inEscape {
                out.unicodeScalars.append(scalar)
                if (0x40...0x7E).contains(scalar.value), scalar != "[" { inEscape = false }
            } else if scalar == "\u{1B}" {
                inEscape = true
                out.unicodeScalars.append(scalar)
            } else {
                guard width < columns - 1 else { break }
                out.unicodeScalars.append(scalar)
                width += 1
            }
        }
        return out + "…" + reset
    }
}
