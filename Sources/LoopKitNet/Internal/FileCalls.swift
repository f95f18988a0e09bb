#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

// The file-system calls of LoopKitNet's Files/, in one place. Each runs on a work-pool thread (never on
// a loop's), retries EINTR, and reports failure as a FileError naming the operation and the path.

enum FileCalls {
    static func openFile(_ path: String, flags: Int32, permissions: UInt32) throws(FileError) -> Int32 {
        while true {
            let fd = open(path, flags | O_CLOEXEC, mode_t(permissions))
            if fd >= 0 { return fd }
            if errno != EINTR { throw FileError(.open, path: path, code: errno) }
        }
    }

    /// Reads up to `count` bytes at `offset` (nil: at the file's position) into new ``Bytes``; empty at
    /// the end of the file.
    static func readChunk(_ fd: Int32, upTo count: Int, at offset: Int64?, path: String) throws(FileError) -> Bytes {
        var failure: Int32 = 0
        let bytes = Bytes(unsafeUninitializedCapacity: count) { buffer in
            while true {
                let got = offset.map { pread(fd, buffer.baseAddress, count, off_t($0)) } ?? read(fd, buffer.baseAddress, count)
                if got >= 0 { return got }
                if errno != EINTR {
                    failure = errno
                    return 0
                }
            }
        }
        if failure != 0 { throw FileError(.read, path: path, code: failure) }
        return bytes
    }

    /// Writes all of `bytes` at `offset` (nil: at the file's position).
    static func writeAll(_ fd: Int32, _ bytes: Bytes, at offset: Int64?, path: String) throws(FileError) {
        try bytes.withUnsafeBytes { (buffer) throws(FileError) in
            var done = 0
            while done < buffer.count {
                let start = buffer.baseAddress! + done
                let left = buffer.count - done
                let wrote = offset.map { pwrite(fd, start, left, off_t($0) + off_t(done)) } ?? write(fd, start, left)
                if wrote >= 0 {
                    done += wrote
                } else if errno != EINTR {
                    throw FileError(.write, path: path, code: errno)
                }
            }
        }
    }

    static func closeDescriptor(_ fd: Int32, path: String) throws(FileError) {
        // Linux frees the descriptor even when close fails (EINTR included): never retry.
        if close(fd) != 0 { throw FileError(.close, path: path, code: errno) }
    }

    static func info(of fd: Int32, path: String) throws(FileError) -> FileInfo {
        var status = stat()
        guard fstat(fd, &status) == 0 else { throw FileError(.stat, path: path, code: errno) }
        return FileInfo(status)
    }

    /// `fstat(2)` of `fd`, raw.
    static func status(of fd: Int32, path: String) throws(FileError) -> stat {
        var status = stat()
        guard fstat(fd, &status) == 0 else { throw FileError(.stat, path: path, code: errno) }
        return status
    }

    /// `stat(2)` of `path` (links followed), raw; nil when it fails.
    static func status(at path: String) -> stat? {
        var status = stat()
        return stat(path, &status) == 0 ? status : nil
    }

    static func info(at path: String, followingLinks: Bool) throws(FileError) -> FileInfo {
        var status = stat()
        let result = followingLinks ? stat(path, &status) : lstat(path, &status)
        guard result == 0 else { throw FileError(.stat, path: path, code: errno) }
        return FileInfo(status)
    }

    static func renameItem(_ from: String, to: String) throws(FileError) {
        guard rename(from, to) == 0 else { throw FileError(.rename, path: from, code: errno, otherPath: to) }
    }

    static func unlinkFile(_ path: String) throws(FileError) {
        guard unlink(path) == 0 else { throw FileError(.unlink, path: path, code: errno) }
    }

    static func makeDirectory(_ path: String, permissions: UInt32) throws(FileError) {
        guard mkdir(path, mode_t(permissions)) == 0 else { throw FileError(.mkdir, path: path, code: errno) }
    }

    static func removeDirectory(_ path: String) throws(FileError) {
        guard rmdir(path) == 0 else { throw FileError(.rmdir, path: path, code: errno) }
    }

    /// The entries of a directory, without "." and "..", in the order the kernel gives them.
    static func entries(of path: String) throws(FileError) -> [DirectoryEntry] {
        guard let directory = opendir(path) else { throw FileError(.readdir, path: path, code: errno) }
        defer { closedir(directory) }
        var entries: [DirectoryEntry] = []
        while true {
            errno = 0
            guard let entry = readdir(directory) else {
                if errno != 0 { throw FileError(.readdir, path: path, code: errno) }
                return entries
            }
            let name = entryName(entry)
            if name == "." || name == ".." { continue }
            entries.append(DirectoryEntry(name: name, kind: FileKind(directoryEntryType: entry.pointer(to: \.d_type)!.pointee)))
        }
    }

    /// The name of an entry `readdir` returned, read in place up to its NUL. readdir fills only `d_reclen`
    /// bytes, often fewer than a whole `struct dirent`: copying `entry.pointee` (or its `d_name` array) reads
    /// bytes the kernel never wrote, which valgrind reports from a release build.
    static func entryName(_ entry: UnsafeMutablePointer<dirent>) -> String {
        String(cString: UnsafeRawPointer(entry.pointer(to: \.d_name)!).assumingMemoryBound(to: CChar.self))
    }

    static func message(for code: Int32) -> String {
        String(cString: strerror(code))
    }
}

extension FileInfo {
    init(_ status: stat) {
        self.init(
            size: Int64(status.st_size),
            kind: FileKind(mode: UInt32(status.st_mode)),
            permissions: UInt32(status.st_mode) & 0o7777,
            modificationTime: .seconds(status.st_mtim.tv_sec) + .nanoseconds(status.st_mtim.tv_nsec),
            inode: UInt64(status.st_ino))
    }
}

extension FileKind {
    init(mode: UInt32) {
        switch mode & UInt32(S_IFMT) {
        case UInt32(S_IFREG): self = .regularFile
        case UInt32(S_IFDIR): self = .directory
        case UInt32(S_IFLNK): self = .symbolicLink
        default: self = .other
        }
    }

    init(directoryEntryType type: UInt8) {
        switch Int(type) {
        case Int(DT_REG): self = .regularFile
        case Int(DT_DIR): self = .directory
        case Int(DT_LNK): self = .symbolicLink
        default: self = .other
        }
    }
}

extension FileOpenOptions {
    /// The `open(2)` flags.
    var flags: Int32 {
        var flags: Int32 = contains(.write) ? (contains(.read) ? O_RDWR : O_WRONLY) : O_RDONLY
        if contains(.create) { flags |= O_CREAT }
        if contains(.truncate) { flags |= O_TRUNC }
        if contains(.append) { flags |= O_APPEND }
        if contains(.exclusive) { flags |= O_EXCL }
        return flags
    }
}
