/// A `Range: bytes=…` request field (RFC 9110 §14.1.2) resolved against a representation's length.
///
/// ```swift
/// HTTPByteRanges.resolve("bytes=0-99, -100", length: 1000, limit: 16)
/// // .satisfiable([0..<100, 900..<1000])
/// ```
/// A plain value; safe from any thread.
public enum HTTPByteRanges: Sendable, Hashable {
    /// The field is to be ignored (RFC 9110 §14.2): it does not parse, names another unit, or asks for
    /// more ranges than the limit. The whole representation is sent, `200`.
    case ignored
    /// These ranges (in the order asked, overlapping and adjacent ones merged in ascending order): `206`.
    case satisfiable([Range<Int64>])
    /// No range overlaps the representation: `416` with `Content-Range: bytes */length`.
    case unsatisfiable

    /// Resolves a `Range` value against a representation of `length` bytes.
    ///
    /// - Parameters:
    ///   - field: The `Range` field's value.
    ///   - length: The representation's length.
    ///   - limit: The most ranges a request may ask for; more, and the field is ignored (nginx's
    ///     `max_ranges`: 300 one-byte ranges are not answered with 300 parts).
    /// - Returns: What to send.
    public static func resolve(_ field: String, length: Int64, limit: Int) -> HTTPByteRanges {
        guard let specs = parse(field), specs.count <= limit else { return .ignored }
        var ranges: [Range<Int64>] = []
        for spec in specs {
            switch spec {
            case .from(let first, let last):
                guard first < length else { continue }
                ranges.append(first..<(min(last ?? Int64.max - 1, length - 1) + 1))
            case .suffix(let count):
                guard count > 0, length > 0 else { continue }
                ranges.append(max(0, length - count)..<length)
            }
        }
        guard !ranges.isEmpty else { return .unsatisfiable }
        return .satisfiable(coalesced(ranges))
    }

    /// One `range-spec`.
    enum Spec: Hashable {
        /// `first-last` or `first-`.
        case from(Int64, last: Int64?)
        /// `-count`: the last `count` bytes.
        case suffix(Int64)
    }

    /// The specs of a `ranges-specifier` (`bytes=1-2, -5`), or nil when it does not parse (another unit,
    /// `last < first`, a number past `Int64`, no range at all). Empty list elements are allowed (RFC 9110 §5.6.1).
    static func parse(_ field: String) -> [Spec]? {
        guard let equals = field.firstIndex(of: "=") else { return nil }
        guard field[..<equals].trimmingSpaces().lowercased() == "bytes" else { return nil }
        var specs: [Spec] = []
        for element in field[field.index(after: equals)...].split(separator: ",", omittingEmptySubsequences: false) {
            let spec = element.trimmingSpaces()
            if spec.isEmpty { continue }
            guard let dash = spec.firstIndex(of: "-") else { return nil }
            let before = spec[..<dash], after = spec[spec.index(after: dash)...]
            if before.isEmpty {
                guard let count = number(after) else { return nil }
                specs.append(.suffix(count))
            } else {
                guard let first = number(before) else { return nil }
                if after.isEmpty {
                    specs.append(.from(first, last: nil))
                } else {
                    guard let last = number(after), last >= first else { return nil }
                    specs.append(.from(first, last: last))
                }
            }
        }
        return specs.isEmpty ? nil : specs
    }

    /// `1*DIGIT`, within `Int64`.
    private static func number(_ text: Substring) -> Int64? {
        guard !text.isEmpty, text.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) else { return nil }
        return Int64(text)
    }

    /// The ranges as asked when none overlaps or touches another; otherwise sorted and merged
    /// (RFC 9110 §15.3.7.2 lets a server coalesce, whatever the order asked).
    static func coalesced(_ ranges: [Range<Int64>]) -> [Range<Int64>] {
        let sorted = ranges.sorted { $0.lowerBound < $1.lowerBound }
        var merged: [Range<Int64>] = []
        for range in sorted {
            if let last = merged.last, range.lowerBound <= last.upperBound {
                merged[merged.count - 1] = last.lowerBound..<max(last.upperBound, range.upperBound)
            } else {
                merged.append(range)
            }
        }
        return merged.count == ranges.count ? ranges : merged
    }
}
