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
    /// The largest file the route keeps in memory, with its precompressed variants, to answer again with no
    /// read (16 KiB by default; at most 16 MiB). 0 turns the cache off: every request opens its file on the
    /// work pool.
    ///
    /// A kept file is answered on the loop thread, in the request's inline step, after one `stat(2)` of its
    /// path (and one of each variant path the choice depends on) has found it unchanged: that `stat` runs
    /// on the loop thread and blocks it for the kernel's lookup of the path, which is quick for a path
    /// just served (its inode is in the kernel's cache) but not on a file system whose `stat` can wait
    /// (NFS, FUSE): turn the cache off for such a root.
    public var cachedFileSizeLimit: Int
    /// The most paths the cache holds, each with its file and its variants (1,024 by default; 0 turns it
    /// off). When full, a path not used since the clock hand last passed it is dropped for each one added.
    public var cachedPathLimit: Int

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
    ///   - cachedFileSizeLimit: The largest file kept in memory (16 KiB by default; 0: no cache).
    ///   - cachedPathLimit: The most paths kept (1,024 by default; 0: no cache).
    public init(contentTypes: HTTPContentTypes = .standard, cacheControl: String? = nil, indexFile: String? = "index.html",
                maxRanges: Int = 16, followsSymbolicLinksOutOfRoot: Bool = false, servesHiddenFiles: Bool = false,
                precompressed: [HTTPContentCoding] = [.brotli, .zstd, .gzip], chunkSize: Int = 64 * 1024,
                cachedFileSizeLimit: Int = 16 * 1024, cachedPathLimit: Int = 1024) {
        self.contentTypes = contentTypes
        self.cacheControl = cacheControl
        self.indexFile = indexFile
        self.maxRanges = maxRanges
        self.followsSymbolicLinksOutOfRoot = followsSymbolicLinksOutOfRoot
        self.servesHiddenFiles = servesHiddenFiles
        self.precompressed = precompressed
        self.chunkSize = max(1, chunkSize)
        self.cachedFileSizeLimit = min(max(0, cachedFileSizeLimit), 16 * 1024 * 1024)
        self.cachedPathLimit = max(0, cachedPathLimit)
    }
}
