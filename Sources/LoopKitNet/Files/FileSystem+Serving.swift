#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

// A file opened to be sent (LoopKitHTTP's file routes): the check, `open`, `fstat` and, for a small file,
// its whole content read and the descriptor closed again, in one task on the pool instead of one each. A
// 1 KiB file's request went from 220.6k to 159.8k instructions with it (`make bench-files-callgrind`).

extension FileSystem {
    /// A file opened for sending: open, with what `fstat` told, or read whole and closed.
    package enum FileToSend: Sendable {
        /// The file is open (larger than the limit, not a regular file, or it changed while it was read).
        case open(OpenFile, FileInfo)
        /// The file's content, read whole (its size is `info.size`); the descriptor is closed.
        case read(Bytes, FileInfo)
    }

    /// What the pool task found, before the descriptor becomes an ``OpenFile`` on the loop.
    private enum Found: Sendable {
        case refused
        case open(Int32, FileInfo)
        case read(Bytes, FileInfo)
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
                let info = try FileCalls.info(of: fd, path: path)
                guard info.kind == .regularFile, info.size <= Int64(limit) else { return .open(fd, info) }
                let bytes = info.size == 0 ? Bytes() : try FileCalls.readChunk(fd, upTo: Int(info.size), at: 0, path: path)
                guard bytes.count == info.size else { return .open(fd, info) }  // it shrank meanwhile: sent as it is
                // A read-only descriptor that fails to close is released all the same: the bytes stand.
                do { try FileCalls.closeDescriptor(fd, path: path) } catch { /* the bytes were read whole */ }
                return .read(bytes, info)
            } catch {
                do { try FileCalls.closeDescriptor(fd, path: path) } catch { /* the read's error is the one to tell */ }
                throw error
            }
        }
        switch found {
        case .refused: return nil
        case .open(let fd, let info): return .open(OpenFile(fd: fd, path: path, fileSystem: self), info)
        case .read(let bytes, let info): return .read(bytes, info)
        }
    }
}
