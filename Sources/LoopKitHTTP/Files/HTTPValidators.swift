#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import HTTPTypes

/// An entity tag (RFC 9110 §8.8.3): `"opaque"` (strong) or `W/"opaque"` (weak).
///
/// A plain value; safe from any thread.
public struct HTTPEntityTag: Sendable, Hashable, CustomStringConvertible {
    /// The quoted part, without the quotes.
    public let opaque: String
    /// Whether it is weak (`W/`).
    public let isWeak: Bool

    /// A tag of this opaque part.
    public init(_ opaque: String, isWeak: Bool = false) {
        self.opaque = opaque
        self.isWeak = isWeak
    }

    /// The strong tag of a file, from its inode, size and modification time (nanoseconds): it changes
    /// whenever the file is replaced or rewritten.
    public init(inode: UInt64, size: Int64, modificationTime: Duration) {
        let (seconds, attoseconds) = modificationTime.components
        let nanoseconds = UInt64(truncatingIfNeeded: seconds) &* 1_000_000_000 &+ UInt64(truncatingIfNeeded: attoseconds / 1_000_000_000)
        self.init(String(inode, radix: 16) + "-" + String(size, radix: 16) + "-" + String(nanoseconds, radix: 16))
    }

    /// The field value: `"…"` or `W/"…"`.
    public var description: String { (isWeak ? "W/\"" : "\"") + opaque + "\"" }

    /// The tags of an `If-Match` or `If-None-Match` value; nil for `*`. Tags that do not parse are left out.
    static func list(_ field: String) -> [HTTPEntityTag]? {
        if field.utf8.elementsEqual("*".utf8) || Substring(field).trimmingSpaces() == "*" { return nil }
        var tags: [HTTPEntityTag] = []
        var rest = Substring(field)
        while true {
            rest = rest.drop { $0 == " " || $0 == "\t" || $0 == "," }
            guard !rest.isEmpty else { break }
            var weak = false
            if rest.hasPrefix("W/") { weak = true; rest = rest.dropFirst(2) }
            guard rest.first == "\"", let close = rest.dropFirst().firstIndex(of: "\"") else { break }
            tags.append(HTTPEntityTag(String(rest[rest.index(after: rest.startIndex)..<close]), isWeak: weak))
            rest = rest[rest.index(after: close)...]
        }
        return tags
    }

    /// One tag (an `If-Range` value), or nil when it is not one.
    static func single(_ field: String) -> HTTPEntityTag? {
        let text = Substring(field).trimmingSpaces()
        guard text.hasPrefix("\"") || text.hasPrefix("W/\"") else { return nil }
        guard let tags = list(String(text)), tags.count == 1 else { return nil }
        return tags[0]
    }

    /// Strong comparison: both strong and the same (RFC 9110 §8.8.3.2).
    func matchesStrongly(_ other: HTTPEntityTag) -> Bool { !isWeak && !other.isWeak && opaque == other.opaque }
    /// Weak comparison: the same opaque part.
    func matchesWeakly(_ other: HTTPEntityTag) -> Bool { opaque == other.opaque }
}

/// HTTP dates (RFC 9110 §5.6.7): formatting as IMF-fixdate and parsing the three forms.
enum HTTPDateFormat {
    /// `Sun, 06 Nov 1994 08:49:37 GMT`.
    static func string(forSeconds seconds: Int) -> String {
        let line = HTTPDateCache.fieldLine(for: seconds)  // "Date: …\r\n"
        return String(decoding: line.dropFirst(6).dropLast(2), as: UTF8.self)
    }

    static let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]

    /// Seconds since 1970 of an IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), an RFC 850 date
    /// (`Sunday, 06-Nov-94 08:49:37 GMT`) or an asctime date (`Sun Nov  6 08:49:37 1994`); nil otherwise.
    static func seconds(_ text: String) -> Int? {
        let words = text.split(whereSeparator: { $0 == " " || $0 == "," || $0 == "-" })
        var day: Int?, month: Int?, year: Int?, clock: [Substring] = []
        switch words.count {
        case 6 where words[5] == "GMT":  // IMF-fixdate, RFC 850
            day = Int(words[1]); month = months.firstIndex(of: words[2].lowercased()); year = Int(words[3])
            clock = words[4].split(separator: ":")
            if let short = year, words[3].count == 2 { year = short < 70 ? 2000 + short : 1900 + short }
        case 5:  // asctime
            month = months.firstIndex(of: words[1].lowercased()); day = Int(words[2]); year = Int(words[4])
            clock = words[3].split(separator: ":")
        default:
            return nil
        }
        guard let day, let month, let year, clock.count == 3, let hour = Int(clock[0]), let minute = Int(clock[1]),
              let second = Int(clock[2]), (1...31).contains(day), (0...23).contains(hour), (0...59).contains(minute),
              (0...60).contains(second) else { return nil }
        var parts = tm()
        parts.tm_year = Int32(year - 1900); parts.tm_mon = Int32(month); parts.tm_mday = Int32(day)
        parts.tm_hour = Int32(hour); parts.tm_min = Int32(minute); parts.tm_sec = Int32(second)
        return Int(timegm(&parts))
    }
}

/// What a request's preconditions (RFC 9110 §13.2.2) say about a representation.
enum HTTPPreconditions {
    enum Outcome: Equatable {
        /// Go on (and send the ranges when ``rangeApplies``).
        case proceed(rangeApplies: Bool)
        /// `304 Not Modified`.
        case notModified
        /// `412 Precondition Failed`.
        case failed
    }

    /// Evaluates `If-Match`, `If-Unmodified-Since`, `If-None-Match`, `If-Modified-Since` and `If-Range`, in
    /// RFC 9110 §13.2.2's order, for a `GET` or `HEAD` of a representation with `tag` and `modified`
    /// (seconds since 1970).
    static func evaluate(_ fields: HTTPFields, tag: HTTPEntityTag, modified: Int) -> Outcome {
        if let ifMatch = fields[.ifMatch] {
            if let tags = HTTPEntityTag.list(ifMatch), !tags.contains(where: { $0.matchesStrongly(tag) }) { return .failed }
        } else if let since = fields[.ifUnmodifiedSince].flatMap(HTTPDateFormat.seconds), modified > since {
            return .failed
        }
        if let ifNoneMatch = fields[.ifNoneMatch] {
            if HTTPEntityTag.list(ifNoneMatch)?.contains(where: { $0.matchesWeakly(tag) }) ?? true { return .notModified }
        } else if let since = fields[.ifModifiedSince].flatMap(HTTPDateFormat.seconds), modified <= since {
            return .notModified
        }
        guard fields[.range] != nil else { return .proceed(rangeApplies: false) }
        guard let ifRange = fields[.ifRange] else { return .proceed(rangeApplies: true) }
        if let validator = HTTPEntityTag.single(ifRange) {
            return .proceed(rangeApplies: validator.matchesStrongly(tag))  // a weak tag never matches
        }
        // A date: the range applies only to a representation last modified exactly then (§13.1.5).
        return .proceed(rangeApplies: HTTPDateFormat.seconds(ifRange) == modified)
    }
}
