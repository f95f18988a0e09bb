/// What kind of file a path names.
public enum FileKind: Sendable, Hashable {
    case regularFile, directory, symbolicLink, other
}

/// What `stat` tells about a file. A plain value; safe from any thread.
public struct FileInfo: Sendable, Hashable {
    /// The size in bytes.
    public let size: Int64
    /// The kind of file.
    public let kind: FileKind
    /// The permission bits (`0o644`, with set-user-ID, set-group-ID and sticky bits).
    public let permissions: UInt32
    /// The last modification, as the time since 1970-01-01 00:00 UTC.
    public let modificationTime: Duration
    /// The inode number.
    public let inode: UInt64
}

/// One entry of a directory listing. A plain value; safe from any thread.
public struct DirectoryEntry: Sendable, Hashable {
    /// The entry's name (not a path).
    public let name: String
    /// Its kind, as the directory tells it (``FileKind/other`` when the file system does not say).
    public let kind: FileKind
}

/// How ``FileSystem/open(_:options:permissions:)`` opens a file.
public struct FileOpenOptions: OptionSet, Sendable, Hashable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// Open for reading.
    public static let read = FileOpenOptions(rawValue: 1 << 0)
    /// Open for writing (with ``read``: both).
    public static let write = FileOpenOptions(rawValue: 1 << 1)
    /// Create the file if it does not exist (`O_CREAT`).
    public static let create = FileOpenOptions(rawValue: 1 << 2)
    /// Empty the file (`O_TRUNC`).
    public static let truncate = FileOpenOptions(rawValue: 1 << 3)
    /// Write at the end, whatever the position (`O_APPEND`).
    public static let append = FileOpenOptions(rawValue: 1 << 4)
    /// Fail if the file exists, with ``create`` (`O_EXCL`).
    public static let exclusive = FileOpenOptions(rawValue: 1 << 5)

    /// Create or empty a file and write it.
    public static let replace: FileOpenOptions = [.write, .create, .truncate]
}
