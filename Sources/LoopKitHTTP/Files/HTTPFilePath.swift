#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A request path turned into a file path under a root, or the reason it cannot be one.
enum HTTPFilePath {
    enum Refusal: Error, Equatable {
        /// A malformed escape, an encoded `/` or NUL, a `.` or `..` segment: 400.
        case malformed
        /// A hidden segment the options do not serve: 404.
        case hidden
    }

    /// The relative path `rest` (a route's remainder, as written: percent-encoded) names under a root, as
    /// `/`-joined decoded segments (empty for the root itself). Nothing in it can leave the root: a
    /// segment is never `.` or `..` (written or encoded), and never holds `/` or NUL.
    static func relativePath(_ rest: Substring, servesHiddenFiles: Bool) throws(Refusal) -> String {
        var segments: [String] = []
        for raw in rest.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: true) {
            var bytes: [UInt8] = []
            bytes.reserveCapacity(raw.count)
            var index = raw.startIndex
            while index < raw.endIndex {
                let byte = raw[index]
                if byte == UInt8(ascii: "%") {
                    let high = raw.index(after: index)
                    guard high < raw.endIndex, raw.index(after: high) < raw.endIndex,
                          let h = hex(raw[high]), let l = hex(raw[raw.index(after: high)]) else { throw .malformed }
                    bytes.append(h << 4 | l)
                    index = raw.index(index, offsetBy: 3)
                } else {
                    bytes.append(byte)
                    index = raw.index(after: index)
                }
            }
            guard !bytes.contains(0), !bytes.contains(UInt8(ascii: "/")), !bytes.contains(UInt8(ascii: "\\")) else {
                throw .malformed
            }
            guard bytes != [UInt8(ascii: ".")], bytes != [UInt8(ascii: "."), UInt8(ascii: ".")] else { throw .malformed }
            guard let segment = String(validating: bytes, as: UTF8.self) else { throw .malformed }
            if segment.hasPrefix("."), !servesHiddenFiles { throw .hidden }
            segments.append(segment)
        }
        return segments.joined(separator: "/")
    }

    private static func hex(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    /// The canonical path (`realpath(3)`: links and `..` resolved), or nil when it does not resolve. Blocks:
    /// call on a work pool.
    static func canonical(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// Whether `path` resolves to `root` (canonical) or a file under it. Blocks: call on a work pool.
    static func isInside(_ path: String, canonicalRoot root: String) -> Bool {
        guard let resolved = canonical(path) else { return false }
        return resolved == root || resolved.hasPrefix(root.hasSuffix("/") ? root : root + "/")
    }
}
