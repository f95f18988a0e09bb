/// The `Content-Type` of a served file by its extension: a table a server extends.
///
/// ```swift
/// var types = HTTPContentTypes.standard
/// types["webmanifest"] = "application/manifest+json"
/// router.files("/static", root: "/srv/static", options: HTTPFileOptions(contentTypes: types))
/// ```
/// Extensions are matched without case; a file with none, or one the table lacks, is
/// ``defaultType`` (`application/octet-stream`, which browsers download rather than render).
///
/// A plain value; safe from any thread.
public struct HTTPContentTypes: Sendable, Hashable {
    /// The types by lowercased extension, without the dot.
    public private(set) var types: [String: String]
    /// The type of a file whose extension the table lacks.
    public var defaultType: String

    /// A table of these types (extensions without the dot) and this default.
    public init(_ types: [String: String] = [:], defaultType: String = "application/octet-stream") {
        self.types = Dictionary(types.map { ($0.key.lowercased(), $0.value) }, uniquingKeysWith: { _, last in last })
        self.defaultType = defaultType
    }

    /// The type of `fileExtension` (without the dot), or nil; setting adds or replaces it.
    public subscript(fileExtension: String) -> String? {
        get { types[fileExtension.lowercased()] }
        set { types[fileExtension.lowercased()] = newValue }
    }

    /// The type of the file named `name` (its last extension), or ``defaultType``.
    public func type(forFileNamed name: some StringProtocol) -> String {
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return defaultType }
        return types[name[name.index(after: dot)...].lowercased()] ?? defaultType
    }

    /// The web's common types: text as UTF-8, images, fonts, audio, video, archives, WebAssembly.
    public static let standard = HTTPContentTypes([
        "html": "text/html; charset=utf-8", "htm": "text/html; charset=utf-8",
        "css": "text/css; charset=utf-8", "js": "text/javascript; charset=utf-8", "mjs": "text/javascript; charset=utf-8",
        "json": "application/json", "map": "application/json", "webmanifest": "application/manifest+json",
        "txt": "text/plain; charset=utf-8", "md": "text/markdown; charset=utf-8", "csv": "text/csv; charset=utf-8",
        "xml": "application/xml", "svg": "image/svg+xml", "wasm": "application/wasm", "pdf": "application/pdf",
        "png": "image/png", "jpg": "image/jpeg", "jpeg": "image/jpeg", "gif": "image/gif", "webp": "image/webp",
        "avif": "image/avif", "ico": "image/vnd.microsoft.icon", "bmp": "image/bmp",
        "woff": "font/woff", "woff2": "font/woff2", "ttf": "font/ttf", "otf": "font/otf",
        "mp3": "audio/mpeg", "ogg": "audio/ogg", "wav": "audio/wav", "flac": "audio/flac",
        "mp4": "video/mp4", "webm": "video/webm", "mov": "video/quicktime",
        "zip": "application/zip", "gz": "application/gzip", "tar": "application/x-tar",
        "br": "application/octet-stream", "zst": "application/zstd",
    ])
}
