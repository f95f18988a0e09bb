#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The `Date` field's value (IMF-fixdate, RFC 9110 §5.6.7), formatted once per second.
///
/// One per loop: not thread-safe. No Foundation: `time` and `gmtime_r` from the C library.
struct HTTPDateCache {
    private var second: Int = -1
    /// `Date: Sun, 06 Nov 1994 08:49:37 GMT\r\n`: the whole field line.
    private(set) var fieldLine: [UInt8] = []

    /// Updates the cached line when the second has changed. Call before each response.
    mutating func refresh() {
        let now = time(nil)
        guard now != second else { return }
        second = now
        fieldLine = Self.fieldLine(for: now)
    }

    static func fieldLine(for seconds: Int) -> [UInt8] {
        var clock = time_t(seconds)
        var parts = tm()
        gmtime_r(&clock, &parts)
        let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        var line = Array("Date: ".utf8)
        line.reserveCapacity(37)
        line += days[Int(parts.tm_wday)].utf8
        line += ", ".utf8
        appendTwoDigits(Int(parts.tm_mday), to: &line)
        line.append(UInt8(ascii: " "))
        line += months[Int(parts.tm_mon)].utf8
        line.append(UInt8(ascii: " "))
        let year = Int(parts.tm_year) + 1900
        appendTwoDigits(year / 100, to: &line)
        appendTwoDigits(year % 100, to: &line)
        line.append(UInt8(ascii: " "))
        appendTwoDigits(Int(parts.tm_hour), to: &line)
        line.append(UInt8(ascii: ":"))
        appendTwoDigits(Int(parts.tm_min), to: &line)
        line.append(UInt8(ascii: ":"))
        appendTwoDigits(Int(parts.tm_sec), to: &line)
        line += " GMT\r\n".utf8
        return line
    }

    private static func appendTwoDigits(_ value: Int, to line: inout [UInt8]) {
        line.append(UInt8(ascii: "0") + UInt8(value / 10))
        line.append(UInt8(ascii: "0") + UInt8(value % 10))
    }
}
