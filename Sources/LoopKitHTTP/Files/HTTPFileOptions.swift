/// How ``HTTPRouter/files(_:root:options:)`` serves a directory. The defaults are the hardened ones.
///
/// ```swift
/// router.files("/static", root: "/srv/static",
///              options: HTTPFileOptions(cacheControl: "public, max-age=3600", indexFile: nil))
/// ```
/// A plain value; safe from any thread.
public struct HTTPFileOptions: Sendable {
    /// The `Content-Type` table (``HTTPContentTypes/standard`` by default).
    public var contentTypes: HTTPContentTypes
    /// The `Cache-Control` value of every file response (and `304`); nil sends none.
    public var cacheControl: String?
    /// The file served for a directory (`/static/docs/` serves `docs/index.html`); nil serves none (404).
    public var indexFile: String?
    /// The most ranges one `Range` field may ask for; more, and the whole file is sent (`200`).
    public var maxRanges: Int
    /// Whether a symbolic link may lead out of the root. False: such a file is 404.
    public var followsSymbolicLinksOutOfRoot: Bool
    /// Whether a path with a segment starting with `.` (`.git`, `.env`) is served. False: 404.
    public var servesHiddenFiles: Bool
    /// The precompressed variants looked for, best first: `file.br`, `file.zst`, `file.gz` beside
    /// `file`, sent with `Content-Encoding` to a client whose `Accept-Encoding` takes them. Empty: none.
    public var precompressed: [HTTPContentCoding]
    /// The size of each read from a file.
    public var chunkSize: Int

    /// Options with these values; each default is the hardened one.
    ///
    /// - Parameters:
    ///   - contentTypes: The `Content-Type` table.
    ///   - cacheControl: The `Cache-Control` value; nil, the default, for none.
    ///   - indexFile: A directory's file (`index.html` by default); nil for none.
    ///   - maxRanges: The most ranges a request may ask for (16 by default).
    ///   - followsSymbolicLinksOutOfRoot: Whether links may leave the root (false by default).
    ///   - servesHiddenFiles: Whether dot files are served (false by default).
    ///   - precompressed: The variants looked for (`.br`, `.zst`, `.gz` by default).
    ///   - chunkSize: The size of each read (64 KiB by default).
    public init(contentTypes: HTTPContentTypes = .standard, cacheControl: String? = nil, indexFile: String? = "index.html",
                maxRanges: Int = 16, followsSymbolicLinksOutOfRoot: Bool = false, servesHiddenFiles: Bool = false,
                precompressed: [HTTPContentCoding] = [.brotli, .zstd, .gzip], chunkSize: Int = 64 * 1024) {
        self.contentTypes = contentTypes
        self.cacheControl = cacheControl
        self.indexFile = indexFile
        self.maxRanges = maxRanges
        self.followsSymbolicLinksOutOfRoot = followsSymbolicLinksOutOfRoot
        self.servesHiddenFiles = servesHiddenFiles
        self.precompressed = precompressed
        self.chunkSize = max(1, chunkSize)
    }
}
