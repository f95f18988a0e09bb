#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Why a ``PathWatcher`` could not start, add or keep a watch.
///
/// A plain value; safe from any thread.
public enum PathWatchError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The path does not exist (`ENOENT`), or a component of it is not a directory (`ENOTDIR`).
    case notFound(String)
    /// The process may not read the path (`EACCES`).
    case permissionDenied(String)
    /// The user's inotify watch limit is reached (`ENOSPC`): raise `/proc/sys/fs/inotify/max_user_watches`
    /// or watch less. The path is the one that could not be added (for a recursive watch, possibly a
    /// subdirectory).
    case watchLimitReached(String)
    /// The user's limit of inotify instances is reached (`EMFILE` from `inotify_init1`): raise
    /// `/proc/sys/fs/inotify/max_user_instances` or share a watcher between paths.
    case instanceLimitReached
    /// ``PathWatcher/unwatch(_:)`` was given a path that is not watched.
    case notWatched(String)
    /// The watcher was closed (``PathWatcher/close()``) and refuses the operation.
    case closed
    /// The watcher's loop has begun to shut down; the watcher closed with it.
    case loopShutDown
    /// Another system call failed: its name, the path when there is one, and `errno`.
    case system(String, path: String?, Int32)

    /// The error for `inotify_add_watch(path)` failing with `code`.
    init(adding path: String, code: Int32) {
        switch code {
        case ENOENT, ENOTDIR: self = .notFound(path)
        case EACCES: self = .permissionDenied(path)
        case ENOSPC: self = .watchLimitReached(path)
        default: self = .system("inotify_add_watch", path: path, code)
        }
    }

    /// A short English description with the details.
    public var description: String {
        switch self {
        case .notFound(let path): "cannot watch '\(path)': no such file or directory (ENOENT)"
        case .permissionDenied(let path): "cannot watch '\(path)': permission denied (EACCES)"
        case .watchLimitReached(let path):
            "cannot watch '\(path)': the inotify watch limit is reached (ENOSPC); raise /proc/sys/fs/inotify/max_user_watches"
        case .instanceLimitReached:
            "cannot create a path watcher: the inotify instance limit is reached (EMFILE); raise /proc/sys/fs/inotify/max_user_instances"
        case .notWatched(let path): "'\(path)' is not watched by this watcher"
        case .closed: "the path watcher is closed"
        case .loopShutDown: "the loop is shutting down (the path watcher closed with it)"
        case .system(let call, let path, let code):
            "\(call)\(path.map { " '\($0)'" } ?? "") failed: \(Inotify.message(for: code)) (errno \(code))"
        }
    }

    /// The `errno` behind the error: `ENOENT`, `EACCES`, `ENOSPC`, `EMFILE`; `EBADF` for a closed watcher,
    /// `ECANCELED` for a loop that shut down, `EINVAL` for a path that is not watched.
    public var code: Int32 {
        switch self {
        case .notFound: ENOENT
        case .permissionDenied: EACCES
        case .watchLimitReached: ENOSPC
        case .instanceLimitReached: EMFILE
        case .notWatched: EINVAL
        case .closed: EBADF
        case .loopShutDown: ECANCELED
        case .system(_, _, let code): code
        }
    }
}
