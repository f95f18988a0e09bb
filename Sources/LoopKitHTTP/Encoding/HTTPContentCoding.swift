/// A content coding of RFC 9110 §8.4.1 (`gzip`, `br`, `zstd`), as `Content-Encoding` and
/// `Accept-Encoding` name it.
///
/// A plain value; safe from any thread.
public struct HTTPContentCoding: Sendable, Hashable, CustomStringConvertible {
    /// The coding's token, lowercased (`gzip`).
    public let token: String
    /// The file-name extension of a precompressed variant (`gz` for `index.html.gz`).
    public let fileExtension: String

    /// A coding with this token and file extension.
    public init(token: String, fileExtension: String) {
        self.token = token.lowercased()
        self.fileExtension = fileExtension
    }

    /// Brotli (RFC 7932), `br`, files ending `.br`.
    public static let brotli = HTTPContentCoding(token: "br", fileExtension: "br")
    /// Zstandard (RFC 8878), `zstd`, files ending `.zst`.
    public static let zstd = HTTPContentCoding(token: "zstd", fileExtension: "zst")
    /// gzip (RFC 1952), `gzip` (and `x-gzip`), files ending `.gz`.
    public static let gzip = HTTPContentCoding(token: "gzip", fileExtension: "gz")

    public var description: String { token }
}

/// What a request's `Accept-Encoding` (RFC 9110 §12.5.3) accepts: each coding's quality value.
///
/// ```swift
/// let accept = HTTPAcceptEncoding("br;q=1.0, gzip;q=0.8, identity;q=0")
/// accept.preferred(among: [.gzip, .brotli])   // .coding(.brotli)
/// ```
/// A plain value; safe from any thread.
public struct HTTPAcceptEncoding: Sendable, Hashable {
    /// What to send.
    public enum Choice: Sendable, Hashable {
        /// This coding.
        case coding(HTTPContentCoding)
        /// No coding.
        case identity
        /// Nothing available is acceptable (`identity;q=0` or `*;q=0`, and no coding offered fits): 406.
        case notAcceptable
    }

    /// Each listed token (lowercased, `x-gzip` as `gzip`) and its quality, 0 to 1000 (q=1 is 1000).
    let qualities: [String: Int]
    /// Whether the request had the field at all.
    let isPresent: Bool

    /// The codings `field` (the `Accept-Encoding` value, nil when absent) accepts. An element that does not
    /// parse is left out.
    public init(_ field: String?) {
        isPresent = field != nil
        var qualities: [String: Int] = [:]
        for element in (field ?? "").split(separator: ",") {
            let parts = element.split(separator: ";")
            guard let first = parts.first else { continue }
            var token = first.trimmingSpaces().lowercased()
            guard !token.isEmpty else { continue }
            if token == "x-gzip" { token = "gzip" }
            var quality = 1000
            for parameter in parts.dropFirst() {
                let pair = parameter.split(separator: "=", maxSplits: 1)
                guard pair.count == 2, pair[0].trimmingSpaces().lowercased() == "q" else { continue }
                guard let value = Self.quality(pair[1].trimmingSpaces()) else { quality = -1; break }
                quality = value
            }
            guard quality >= 0 else { continue }
            qualities[token] = max(qualities[token] ?? 0, quality)
        }
        self.qualities = qualities
    }

    /// The quality of `token` (RFC 9110 §12.5.3: a coding not listed takes `*`'s, else it is not
    /// acceptable; `identity` not listed takes `*`'s, else it is), 0 to 1000.
    public func quality(of token: String) -> Int {
        // Lowercased only when it has a capital: the codings' own tokens are lowercase already.
        let token = token.utf8.contains(where: { $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") }) ? token.lowercased() : token
        if let listed = qualities[token] { return listed }
        if let any = qualities["*"] { return any }
        return token == "identity" ? 1000 : 0
    }

    /// The best of `available` (in the server's order of preference, which breaks ties) and the identity:
    /// the coding of highest non-zero quality, preferred to the identity at equal quality (and to an
    /// identity the field does not name); the identity when no coding is acceptable, unless it is refused
    /// too. No field at all: the identity.
    ///
    /// - Parameter available: The codings the server can send, best first.
    public func preferred(among available: [HTTPContentCoding]) -> Choice {
        guard isPresent else { return .identity }
        var best: (coding: HTTPContentCoding, quality: Int)?
        for coding in available {
            let quality = quality(of: coding.token)
            if quality > 0, quality > (best?.quality ?? 0) { best = (coding, quality) }
        }
        // The identity the field does not name (nor `*`) is acceptable, but any listed coding is preferred.
        let identity = qualities["identity"] ?? qualities["*"] ?? 1
        if let best, best.quality >= identity { return .coding(best.coding) }
        return identity > 0 ? .identity : .notAcceptable
    }

    /// `qvalue = ( "0" [ "." 0*3DIGIT ] ) / ( "1" [ "." 0*3("0") ] )`, in thousandths.
    private static func quality(_ text: Substring) -> Int? {
        let bytes = Array(text.utf8)
        guard let first = bytes.first, first == UInt8(ascii: "0") || first == UInt8(ascii: "1") else { return nil }
        var value = Int(first - UInt8(ascii: "0")) * 1000
        guard bytes.count > 1 else { return value }
        guard bytes[1] == UInt8(ascii: "."), bytes.count <= 5 else { return nil }
        var scale = 100
        for digit in bytes.dropFirst(2) {
            guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(digit) else { return nil }
            value += Int(digit - UInt8(ascii: "0")) * scale
            scale /= 10
        }
        return value <= 1000 ? value : nil
    }
}

extension Substring {
    /// Without leading and trailing spaces and tabs (HTTP's OWS).
    func trimmingSpaces() -> Substring {
        var text = self
        while let first = text.first, first == " " || first == "\t" { text = text.dropFirst() }
        while let last = text.last, last == " " || last == "\t" { text = text.dropLast() }
        return text
    }
}
