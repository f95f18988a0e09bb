/// The sizes a request may reach before the parser refuses it; every limit has a safe default.
public struct HTTPParserLimits: Sendable, Hashable {
    /// The longest request line, CRLF included (default 8 KiB); longer → 431.
    public var maxRequestLineLength: Int = 8 * 1024
    /// The largest request head (request line and fields, final CRLF included), and the largest trailer
    /// section (default 16 KiB); larger → 431.
    public var maxHeadSize: Int = 16 * 1024
    /// The most field lines in a head (default 100); more → 431.
    public var maxFieldCount: Int = 100
    /// The largest body (default 1 MiB), by `Content-Length` or decoded chunks; larger → 413.
    public var maxBodySize: Int = 1024 * 1024
    /// The longest chunk-size line, extensions included (default 1 KiB); longer → 400.
    public var maxChunkSizeLineLength: Int = 1024

    /// The defaults.
    public init() {}

    /// Limits with the given values; the others keep their defaults.
    ///
    /// - Parameters:
    ///   - maxRequestLineLength: The longest request line.
    ///   - maxHeadSize: The largest head and trailer section.
    ///   - maxFieldCount: The most field lines.
    ///   - maxBodySize: The largest body.
    public init(maxRequestLineLength: Int = 8 * 1024, maxHeadSize: Int = 16 * 1024,
                maxFieldCount: Int = 100, maxBodySize: Int = 1024 * 1024) {
        self.maxRequestLineLength = maxRequestLineLength
        self.maxHeadSize = maxHeadSize
        self.maxFieldCount = maxFieldCount
        self.maxBodySize = maxBodySize
    }
}
