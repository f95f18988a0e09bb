#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Why a file-system operation failed: the operation, the path and the `errno` the system gave.
///
/// A plain value; safe from any thread.
public struct FileError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A file-system operation.
    public enum Operation: String, Sendable {
        case open, read, write, close, stat, rename, unlink, mkdir, rmdir, readdir
    }

    /// What failed.
    public let operation: Operation
    /// The path it was given (for ``Operation/rename``, the source).
    public let path: String
    /// The rename's destination; nil for every other operation.
    public let otherPath: String?
    /// The `errno` (`ENOENT`, `EACCES`, …); `EBADF` for a file that was closed.
    public let code: Int32
    /// Whether the operation was refused because ``OpenFile/close()`` had been called (not a system call).
    public let fileWasClosed: Bool

    /// Creates an error for `operation` on `path` that failed with `code`.
    public init(_ operation: Operation, path: String, code: Int32, otherPath: String? = nil) {
        self.operation = operation
        self.path = path
        self.code = code
        self.otherPath = otherPath
        fileWasClosed = false
    }

    private init(closedFile operation: Operation, path: String) {
        self.operation = operation
        self.path = path
        otherPath = nil
        code = FileError.badDescriptor
        fileWasClosed = true
    }

    /// The error for an operation on a file that was closed.
    static func closed(_ operation: Operation, path: String) -> FileError { FileError(closedFile: operation, path: path) }

    static let badDescriptor: Int32 = EBADF

    /// "open '/srv/a.txt' failed: No such file or directory (errno 2)".
    public var description: String {
        let target = otherPath.map { "'\(path)' to '\($0)'" } ?? "'\(path)'"
        if fileWasClosed { return "\(operation.rawValue) \(target) failed: the file was closed" }
        return "\(operation.rawValue) \(target) failed: \(FileCalls.message(for: code)) (errno \(code))"
    }
}
