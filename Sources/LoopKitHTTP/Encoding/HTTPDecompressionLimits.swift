import HTTPTypes
import LoopKitNet

/// How far a compressed request body may expand: a size limit and a ratio limit, so that a small body
/// that decodes to gigabytes (a decompression bomb) is refused with 413 as soon as it passes either,
/// with nothing decoded kept past the limit.
///
/// A plain value; safe from any thread.
public struct HTTPDecompressionLimits: Sendable, Hashable {
    /// The most bytes a body may decode to (default 8 MiB).
    public var maxSize: Int
    /// The most decoded bytes per compressed byte (default 100; text rarely passes 20), checked once
    /// the decoded bytes pass ``ratioFloor``.
    public var maxRatio: Int
    /// Decoded bytes below this never break the ratio limit (default 64 KiB): a small body of one
    /// repeated byte may well decode at 1000 to 1.
    public var ratioFloor: Int

    /// Limits; every one has a default.
    public init(maxSize: Int = 8 << 20, maxRatio: Int = 100, ratioFloor: Int = 64 << 10) {
        self.maxSize = maxSize
        self.maxRatio = maxRatio
        self.ratioFloor = ratioFloor
    }
}

/// Decodes one request body of a `Content-Encoding` within ``HTTPDecompressionLimits``: 415 for a
/// coding it does not implement (with `Accept-Encoding` naming those it does, RFC 9110 §15.5.16), 413
/// past a limit, 400 for data that is not of the coding or is cut short.
///
/// Loop-confined (one request's body).
final class HTTPBodyDecompressor {
    /// The codings request bodies may have.
    static let supported: [HTTPContentCoding] = [.gzip, .brotli, .zstd]

    private let decoder: any HTTPContentDecoder
    private let limits: HTTPDecompressionLimits
    private(set) var consumed = 0
    private(set) var produced = 0

    /// A decompressor for `contentEncoding` (the field's value); nil when the body is not encoded
    /// (no field, or `identity`).
    ///
    /// - Throws: ``HTTPError`` 415 for a coding not implemented, or more than one coding.
    static func make(contentEncoding: String?, limits: HTTPDecompressionLimits) throws(HTTPError) -> HTTPBodyDecompressor? {
        guard let contentEncoding else { return nil }
        let codings = contentEncoding.split(separator: ",").map { $0.trimmingSpaces().lowercased() }.filter { $0 != "identity" && !$0.isEmpty }
        guard !codings.isEmpty else { return nil }
        guard codings.count == 1, let decoder = HTTPContentCoding(token: codings[0], fileExtension: "").makeDecoder() else {
            throw HTTPError(.unsupportedMediaType, "Content-Encoding \(contentEncoding) is not supported",
                            headerFields: [.acceptEncoding: supported.map(\.token).joined(separator: ", ")])
        }
        return HTTPBodyDecompressor(decoder: decoder, limits: limits)
    }

    private init(decoder: any HTTPContentDecoder, limits: HTTPDecompressionLimits) {
        self.decoder = decoder
        self.limits = limits
    }

    /// Decodes `input`, appending the decoded bytes to `output`.
    ///
    /// - Throws: ``HTTPError`` 413 past a limit, 400 for data that does not decode.
    func decode(_ input: UnsafeRawBufferPointer, into output: inout [Bytes]) throws(HTTPError) {
        consumed += input.count
        let ratioAllowance = consumed.multipliedReportingOverflow(by: limits.maxRatio)
        let allowed = min(limits.maxSize, max(limits.ratioFloor, ratioAllowance.overflow ? .max : ratioAllowance.partialValue))
        var decoded: [Bytes] = []
        do {
            try decoder.decode(input, budget: allowed - produced, into: &decoded)
        } catch .tooLarge {
            throw allowed == limits.maxSize
                ? HTTPError(.contentTooLarge, "the request body decodes to more than \(limits.maxSize) bytes")
                : HTTPError(.contentTooLarge, "the request body decodes to more than \(limits.maxRatio) times its size")
        } catch {
            throw HTTPError(.badRequest, "the request body is not valid compressed data")
        }
        for bytes in decoded { produced += bytes.count }
        output += decoded
    }

    /// The body has ended.
    ///
    /// - Throws: ``HTTPError`` 400 when the compressed stream did not end (the body was cut short).
    func finish() throws(HTTPError) {
        do {
            try decoder.finish()
        } catch {
            throw HTTPError(.badRequest, "the request body's compressed data is cut short")
        }
    }
}
