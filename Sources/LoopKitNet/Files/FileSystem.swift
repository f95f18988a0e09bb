import LoopKit

/// File-system operations on a work pool, with their results handed back to a loop: what libuv's
/// `uv_fs_*` calls do, as async Swift.
///
/// Every call runs its system calls on ``pool`` (never on a loop's thread). The awaiting task resumes
/// on its own executor: a task on ``loop`` (one that prefers it, or an actor pinned to it) goes on in
/// the loop's drain after the call ended (rule R13). Failures are ``FileError``s naming the operation,
/// the path and the `errno`.
///
/// ```swift
/// let files = FileSystem(loop: loop)
/// let file = try await files.open("/srv/index.html")
/// for try await chunk in file.chunks() { try await connection.write(chunk) }
/// try await file.close()
/// ```
///
/// A plain value; safe from any thread.
public struct FileSystem: Sendable {
    /// The loop whose tasks the results go back to; a loop that has shut down refuses new calls.
    public let loop: EventLoop
    /// Where the system calls run.
    public let pool: WorkPool

    /// A file system whose calls run on `pool` and answer `loop`.
    ///
    /// Safe from any thread.
    public init(loop: EventLoop, pool: WorkPool = .shared) {
        self.loop = loop
        self.pool = pool
    }

    /// Runs `work` on the pool for the loop (`EventLoop.offload(to:_:)`).
    func run<Value: Sendable>(_ work: @escaping @Sendable () throws -> Value) async throws -> Value {
        try await loop.offload(to: pool, work)
    }

    /// Opens a file.
    ///
    /// - Parameters:
    ///   - path: The file's path.
    ///   - options: How to open it; reading by default.
    ///   - permissions: The permission bits of a file that ``FileOpenOptions/create`` creates.
    /// - Returns: The open file; close it with ``OpenFile/close()``.
    /// - Throws: ``FileError`` (`ENOENT`, `EACCES`, `EEXIST`, …); `CancellationError`; `EventLoopError`
    ///   and `WorkPoolError` when the loop or the pool refuses.
    ///
    /// Safe from any thread or task. The corresponding libuv call is `uv_fs_open`.
    public func open(_ path: String, options: FileOpenOptions = .read, permissions: UInt32 = 0o644) async throws -> OpenFile {
        let fd = try await run { try FileCalls.openFile(path, flags: options.flags, permissions: permissions) }
        return OpenFile(fd: fd, path: path, fileSystem: self)
    }

    /// What `stat` (or `lstat`) tells about a path.
    ///
    /// - Parameters:
    ///   - path: The path.
    ///   - followingLinks: Whether a symbolic link is followed (`stat`) or described itself (`lstat`).
    /// - Throws: ``FileError``; `CancellationError`; the loop's and the pool's refusals.
    ///
    /// Safe from any thread or task. The corresponding libuv calls are `uv_fs_stat` and `uv_fs_lstat`.
    public func info(at path: String, followingLinks: Bool = true) async throws -> FileInfo {
        try await run { try FileCalls.info(at: path, followingLinks: followingLinks) }
    }

    /// Renames (moves) `source` to `destination`, replacing a file there (`rename(2)`).
    ///
    /// - Throws: ``FileError``; `CancellationError`; the loop's and the pool's refusals.
    ///
    /// Safe from any thread or task. The corresponding libuv call is `uv_fs_rename`.
    public func rename(_ source: String, to destination: String) async throws {
        try await run { try FileCalls.renameItem(source, to: destination) }
    }

    /// Removes a file (`unlink(2)`).
    ///
    /// - Throws: ``FileError``; `CancellationError`; the loop's and the pool's refusals.
    ///
    /// Safe from any thread or task. The corresponding libuv call is `uv_fs_unlink`.
    public func removeFile(at path: String) async throws {
        try await run { try FileCalls.unlinkFile(path) }
    }

    /// Creates a directory (`mkdir(2)`; its parent must exist).
    ///
    /// - Throws: ``FileError`` (`EEXIST`, `ENOENT`, …); `CancellationError`; the loop's and the pool's refusals.
    ///
    /// Safe from any thread or task. The corresponding libuv call is `uv_fs_mkdir`.
    public func createDirectory(at path: String, permissions: UInt32 = 0o755) async throws {
        try await run { try FileCalls.makeDirectory(path, permissions: permissions) }
    }

    /// Removes an empty directory (`rmdir(2)`).
    ///
    /// - Throws: ``FileError``; `CancellationError`; the loop's and the pool's refusals.
    ///
    /// Safe from any thread or task. The corresponding libuv call is `uv_fs_rmdir`.
    public func removeDirectory(at path: String) async throws {
        try await run { try FileCalls.removeDirectory(path) }
    }

    /// The entries of a directory, without `.` and `..`, in the order the file system gives them.
    ///
    /// - Throws: ``FileError``; `CancellationError`; the loop's and the pool's refusals.
    ///
    /// Safe from any thread or task. The corresponding libuv call is `uv_fs_scandir`.
    public func contentsOfDirectory(at path: String) async throws -> [DirectoryEntry] {
        try await run { try FileCalls.entries(of: path) }
    }

    /// Reads a whole file as chunks, opening it on the first request and closing it at the end (see
    /// ``FileChunks``): at most `readAhead` chunks are read ahead of the consumer.
    ///
    /// Safe from any thread.
    public func chunks(of path: String, chunkSize: Int = FileChunks.defaultChunkSize,
                       readAhead: Int = FileChunks.defaultReadAhead) -> FileChunks {
        FileChunks(source: .path(path, self), chunkSize: chunkSize, readAhead: readAhead, offset: 0)
    }
}
