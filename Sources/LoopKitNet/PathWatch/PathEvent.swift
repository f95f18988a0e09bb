/// What changed about a path, as a ``PathEvent`` tells it. The raw values are `loopkit.h`'s `LK_FS_*` flags.
///
/// A plain value; safe from any thread.
public struct PathChanges: OptionSet, Sendable, Hashable, CustomStringConvertible {
    public let rawValue: Int32
    /// Creates a set from raw bits (`LK_FS_CREATED` … `LK_FS_OVERFLOW`).
    public init(rawValue: Int32) { self.rawValue = rawValue }

    /// The path was created in a watched directory (`IN_CREATE`).
    public static let created = PathChanges(rawValue: 1)
    /// The file's contents were written (`IN_MODIFY`).
    public static let modified = PathChanges(rawValue: 2)
    /// Its permissions, owner, timestamps or link count changed (`IN_ATTRIB`).
    public static let attributesChanged = PathChanges(rawValue: 4)
    /// It was removed (`IN_DELETE`; for a watched path itself, `IN_DELETE_SELF`).
    public static let removed = PathChanges(rawValue: 8)
    /// It was renamed away from this path (`IN_MOVED_FROM`; for a watched path itself, `IN_MOVE_SELF`).
    public static let movedFrom = PathChanges(rawValue: 16)
    /// Something was renamed to this path (`IN_MOVED_TO`).
    public static let movedTo = PathChanges(rawValue: 32)
    /// The kernel's event queue overflowed and events were lost (`IN_Q_OVERFLOW`): look at the watched
    /// paths again. The event's path is empty.
    public static let overflow = PathChanges(rawValue: 64)

    /// The names of the changes, such as `[created, modified]`.
    public var description: String {
        let names: [(PathChanges, String)] = [
            (.created, "created"), (.modified, "modified"), (.attributesChanged, "attributesChanged"),
            (.removed, "removed"), (.movedFrom, "movedFrom"), (.movedTo, "movedTo"), (.overflow, "overflow"),
        ]
        return "[" + names.filter { contains($0.0) }.map(\.1).joined(separator: ", ") + "]"
    }
}

/// A change to a watched path, or to an entry of a watched directory, told by a ``PathWatcher``.
///
/// Events are coalesced per read of the watcher's inotify descriptor (one read per loop iteration): every
/// event for the same path in that read becomes one, with the changes merged, in the place of the path's
/// first event. So a file created and written in one iteration is one event with
/// `[created, modified]`; the order of changes *within* one event is not kept (look at the file when it
/// matters).
///
/// A plain value; safe from any thread.
public struct PathEvent: Sendable, Hashable, CustomStringConvertible {
    /// The path that changed: a watched path, or a watched directory's path joined with the entry's name
    /// with `/`. Empty for ``PathChanges/overflow``.
    public let path: String
    /// What changed.
    public let changes: PathChanges
    /// Whether the path is a directory (`IN_ISDIR`).
    public let isDirectory: Bool
    /// The watched path (as given to ``PathWatcher/watch(_:recursive:)``, normalised) the event is told for:
    /// ``path`` itself or the closest watched directory above it. Empty for ``PathChanges/overflow``.
    public let watchedPath: String

    /// ``path`` relative to ``watchedPath``: `"img/logo.png"` for `/srv/site/img/logo.png` under a watch of
    /// `/srv/site`; empty for the watched path itself (and for an overflow).
    ///
    /// ```swift
    /// for try await event in watcher.events where !event.isDirectory {
    ///     try await upload(event.relativePath)          // the same name under the watch, wherever it is
    /// }
    /// ```
    public var relativePath: String {
        guard !watchedPath.isEmpty, path.count > watchedPath.count else { return "" }
        return String(path.dropFirst(watchedPath == "/" ? 1 : watchedPath.count + 1))
    }

    /// Creates an event (for tests and adapters).
    public init(path: String, changes: PathChanges, isDirectory: Bool = false, watchedPath: String = "") {
        self.path = path
        self.changes = changes
        self.isDirectory = isDirectory
        self.watchedPath = watchedPath
    }

    /// Events are equal when their paths, changes and kinds are: ``watchedPath`` follows from the watcher,
    /// so an event made in a test without it equals the one a watcher tells.
    public static func == (lhs: PathEvent, rhs: PathEvent) -> Bool {
        lhs.path == rhs.path && lhs.changes == rhs.changes && lhs.isDirectory == rhs.isDirectory
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(path)
        hasher.combine(changes)
        hasher.combine(isDirectory)
    }

    /// "/srv/site/a.txt [created, modified]".
    public var description: String { "\(path)\(isDirectory ? "/" : "") \(changes)" }
}
