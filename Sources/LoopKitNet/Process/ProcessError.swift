#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Why a child process could not be started or waited for. A plain value; safe from any thread.
public enum ProcessError: Error, Equatable, Sendable, CustomStringConvertible {
    /// No executable at the path (`ENOENT`).
    case executableNotFound(String)
    /// No executable file with this name (given without a `/`) in any directory of the search path (the
    /// child's `PATH`, else this process's): the name and the search path.
    case notFoundInPath(String, searchPath: String)
    /// The executable (or the working directory) may not be used (`EACCES`, `EPERM`).
    case permissionDenied(String)
    /// An argument that cannot be used (an empty argument list, a limit below 0).
    case invalidArgument(String)
    /// The loop has begun to shut down: the process was not started, or was killed with it.
    case loopShutDown
    /// A system call failed: its name and `errno`.
    case system(String, Int32)

    /// A short English description with the details.
    public var description: String {
        switch self {
        case .executableNotFound(let path): "no executable at \(path)"
        case .notFoundInPath(let name, let searchPath): "no executable named '\(name)' in PATH (\(searchPath))"
        case .permissionDenied(let path): "permission denied: \(path)"
        case .invalidArgument(let what): "invalid argument: \(what)"
        case .loopShutDown: "the loop is shutting down"
        case .system(let call, let code): "\(call) failed: \(String(cString: strerror(code))) (errno \(code))"
        }
    }
}

/// How a child process ended. A plain value; safe from any thread.
public enum ProcessTermination: Sendable, Hashable, CustomStringConvertible {
    /// It exited with this status (0 to 255).
    case exited(Int32)
    /// A signal ended it (`SIGKILL` is 9, `SIGTERM` 15).
    case signaled(Int32)

    /// Whether it exited with status 0.
    public var isSuccess: Bool { self == .exited(0) }

    /// `exited(N)` or `signaled(N)`.
    public var description: String {
        switch self {
        case .exited(let code): "exited(\(code))"
        case .signaled(let signal): "signaled(\(signal))"
        }
    }
}
