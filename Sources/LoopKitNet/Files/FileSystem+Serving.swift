#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

// A file opened to be sent (LoopKitHTTP's file routes): the check, `open`, `fstat` and, for a small file,
// its whole content read and the descriptor closed again, in one task on the pool instead of one each. A
// 1 KiB file's request went from 220.6k to 159.8k instructions with it (`make bench-files-callgrind`).
// A file read whole comes with its ``FileIdentity``, so that a cache of its bytes can tell, with one
// `stat(2)` (``FileSystem/identity(at:)``), whether the path still names the same, unchanged file.

/// What tells one version of a file from another: its device and inode, size, modification and status
/// change times, and mode. Any write, truncation, `rename` over the path, `chmod` or `chown` changes it
/// (the change time moves with each). A plain value; safe from any thread.
package struct FileIdentity: Sendable, Hashable {
    let device: UInt64
    let inode: UInt64
    let size: Int64
    let modified: timespec
    let changed: timespec
    let mode: UInt32

    init(_ status: stat) {
        device = UInt64(status.st_dev)
        inode = UInt64(status.st_ino)
        size = Int64(status.st_size)
        modified = status.st_mtim
        changed = status.st_ctim
        mode = UInt32(status.st_mode)
    }

    package static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.inode == rhs.inode && lhs.device == rhs.device && lhs.size == rhs.size && lhs.mode == rhs.mode
            && lhs.modified.tv_sec == rhs.modified.tv_sec && lhs.modified.tv_nsec == rhs.modified.tv_nsec
            && lhs.changed.tv_sec == rhs.changed.tv_sec && lhs.changed.tv_nsec == rhs.changed.tv_nsec
    }

    /// Whether the file changed so recently that a later change could leave this identity as it is: its
    /// modification or change time lies within the file system's timestamp granularity of now (the "racy"
    /// rule of git's index). Timestamps are taken from a coarse clock on kernels before 6.13 (a tick, up to
    /// 10 ms) and in whole seconds on some file systems (their nanoseconds are then zero): a same-size
    /// rewrite within that time keeps every field of the identity, so a copy kept of such a file could be
    /// stale for good. Reads the real-time clock.
    package var changedTooRecentlyToKeep: Bool {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        let wholeSeconds = modified.tv_nsec == 0 && changed.tv_nsec == 0
        let window: Int64 = wholeSeconds ? 2_000_000_000 : 50_000_000
        func nanoseconds(_ time: timespec) -> Int64 { Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec) }
        let latest = Swift.max(nanoseconds(modified), nanoseconds(changed))
        return latest > nanoseconds(now) - window
    }

    package func hash(into hasher: inout Hasher) {
        hasher.combine(inode)
        hasher.combine(size)
        hasher.combine(modified.tv_nsec)
    }
}

extension FileSystem {
    /// A file opened for sending: open, with what `fstat` told, or read whole and closed.
    package enum FileToSend: Sendable {
        /// The file is open (larger than the limit, not a regular file, or it changed while it was read).
        case open(OpenFile, FileInfo)
        /// The file's content, read whole (its size is `info.size`); the descriptor is closed. The identity
        /// is the one `fstat(2)` gave before the read.
        case read(Bytes, FileInfo, FileIdentity)
    }

    /// The identity of the file `path` names now (links followed), by one `stat(2)` on the calling
    /// thread; nil when it cannot be had (no such file, no permission to search a directory of the path).
    ///
    /// Blocks for the call: meant for a path whose inode the kernel holds (a file just served), where it
    /// costs about what a lookup of the path does. Safe from any thread.
    package static func identity(at path: String) -> FileIdentity? {
        FileCalls.status(at: path).map(FileIdentity.init)
    }

    /// What `stat(2)` tells of `path` (links followed), with the identity a later ``identity(at:)`` is
    /// compared with: one task on the pool.
    ///
    /// - Throws: ``FileError`` from `stat(2)`; `CancellationError`; the loop's and the pool's refusals.
    ///
    /// Safe from any thread or task.
    package func infoAndIdentity(at path: String) async throws -> (info: FileInfo, identity: FileIdentity) {
        let status = try await run { () throws -> stat in
            var status = stat()
            guard stat(path, &status) == 0 else { throw FileError(.stat, path: path, code: errno) }
            return status
        }
        return (FileInfo(status), FileIdentity(status))
    }

    /// What the pool task found, before the descriptor becomes an ``OpenFile`` on the loop.
    private enum Found: Sendable {
        case refused
        case open(Int32, FileInfo)
        case read(Bytes, FileInfo, FileIdentity)
    }

    /// Runs `allowed`, then opens `path` for reading and reads it whole when it is a regular file of at most
    /// `limit` bytes, all in one task on the pool. Returns nil when `allowed` returned false (nothing was
    /// opened).
    ///
    /// - Throws: ``FileError`` from `open(2)`, `fstat(2)` or `pread(2)`; `CancellationError`; the loop's and
    ///   the pool's refusals.
    ///
    /// Safe from any thread or task; `allowed` runs on a pool thread.
    package func openToSend(_ path: String, readingWholeUpTo limit: Int,
                            ifAllowed allowed: @escaping @Sendable () -> Bool) async throws -> FileToSend? {
        let found = try await run { () throws(FileError) -> Found in
            guard allowed() else { return .refused }
            let fd = try FileCalls.openFile(path, flags: FileOpenOptions.read.flags, permissions: 0)
            do throws(FileError) {
                let status = try FileCalls.status(of: fd, path: path)
                let info = FileInfo(status)
                guard info.kind == .regularFile, info.size <= Int64(limit) else { return .open(fd, info) }
                let bytes = info.size == 0 ? Bytes() : try FileCalls.readChunk(fd, upTo: Int(info.size), at: 0, path: path)
                guard bytes.count == info.size else { return .open(fd, info) }  // it shrank meanwhile: sent as it is
                // A read-only descriptor that fails to close is released all the same: the bytes stand.
                do { try FileCalls.closeDescriptor(fd, path: path) } catch { /* the bytes were read whole */ }
                return .read(bytes, info, FileIdentity(status))
            } catch {
                do { try FileCalls.closeDescriptor(fd, path: path) } catch { /* the read's error is the one to tell */ }
                throw error
            }
        }
        switch found {
        case .refused: return nil
        case .open(let fd, let info): return .open(OpenFile(fd: fd, path: path, fileSystem: self), info)
        case .read(let bytes, let info, let identity): return .read(bytes, info, identity)
        }
    }
}
