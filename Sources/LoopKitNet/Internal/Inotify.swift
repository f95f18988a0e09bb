#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

// The inotify calls of LoopKitNet's PathWatch/, in one place: the instance, its watches, reading and
// decoding events, and listing a directory for a recursive watch. Loop thread only (a watcher's).

enum Inotify {
    /// What a watch asks the kernel to report.
    static let mask: UInt32 = UInt32(IN_CREATE | IN_MODIFY | IN_ATTRIB | IN_DELETE | IN_DELETE_SELF | IN_MOVED_FROM
        | IN_MOVED_TO | IN_MOVE_SELF)

    /// One decoded event: the watch it belongs to, its mask and the name (empty for the watched path itself).
    struct RawEvent {
        let wd: Int32
        let mask: UInt32
        let name: String
    }

    /// A new non-blocking, close-on-exec inotify descriptor. The corresponding system call is `inotify_init1`.
    static func open() throws(PathWatchError) -> Int32 {
        let fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        if fd >= 0 { return fd }
        let code = errno
        if code == EMFILE { throw .instanceLimitReached }
        throw .system("inotify_init1", path: nil, code)
    }

    /// Adds (or updates) the watch for `path`; its watch descriptor. The corresponding system call is
    /// `inotify_add_watch`.
    static func addWatch(_ fd: Int32, _ path: String, onlyDirectory: Bool = false) throws(PathWatchError) -> Int32 {
        let wd = inotify_add_watch(fd, path, mask | (onlyDirectory ? UInt32(IN_ONLYDIR) : 0))
        if wd >= 0 { return wd }
        throw PathWatchError(adding: path, code: errno)
    }

    /// Removes a watch; the kernel then queues `IN_IGNORED` for it. A watch already gone is not an error.
    static func removeWatch(_ fd: Int32, _ wd: Int32) {
        _ = inotify_rm_watch(fd, wd)
    }

    /// Closes the inotify descriptor (the kernel drops its watches).
    static func closeDescriptor(_ fd: Int32) {
        Socket.close(fd)
    }

    /// The outcome of one `read` of the descriptor.
    enum ReadOutcome {
        case events(Int)
        case wouldBlock
        case failed(Int32)
    }

    /// Reads whole events into `buffer`. The corresponding system call is `read`.
    static func readEvents(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) -> ReadOutcome {
        while true {
            let got = read(fd, buffer.baseAddress, buffer.count)
            if got > 0 { return .events(got) }
            if got == 0 { return .wouldBlock }
            let code = errno
            if code == EINTR { continue }
            if code == EAGAIN || code == EWOULDBLOCK { return .wouldBlock }
            return .failed(code)
        }
    }

    /// Decodes the `count` bytes of events at the start of `buffer`, in the kernel's order.
    static func decode(_ buffer: UnsafeRawBufferPointer, count: Int, into events: inout [RawEvent]) {
        let header = MemoryLayout<inotify_event>.size
        var offset = 0
        while offset + header <= count {
            let base = buffer.baseAddress! + offset
            let wd = base.loadUnaligned(fromByteOffset: MemoryLayout<inotify_event>.offset(of: \.wd)!, as: Int32.self)
            let mask = base.loadUnaligned(fromByteOffset: MemoryLayout<inotify_event>.offset(of: \.mask)!, as: UInt32.self)
            let length = Int(base.loadUnaligned(fromByteOffset: MemoryLayout<inotify_event>.offset(of: \.len)!, as: UInt32.self))
            var name = ""
            if length > 0 {
                let bytes = UnsafeRawBufferPointer(start: base + header, count: min(length, count - offset - header))
                let end = bytes.firstIndex(of: 0) ?? bytes.count
                name = String(decoding: bytes[..<end], as: UTF8.self)
            }
            events.append(RawEvent(wd: wd, mask: mask, name: name))
            offset += header + length
        }
    }

    /// The entries of a directory (without `.` and `..`), each with whether it is a directory; empty when it
    /// cannot be read (it may be gone already). The corresponding system calls are `opendir` and `readdir`.
    static func entries(of path: String) -> [(name: String, isDirectory: Bool)] {
        guard let directory = opendir(path) else { return [] }
        defer { closedir(directory) }
        var result: [(String, Bool)] = []
        while let entry = readdir(directory) {
            let name = FileCalls.entryName(entry)  // in place: never the whole struct dirent past d_reclen
            if name == "." || name == ".." { continue }
            let type = Int32(entry.pointer(to: \.d_type)!.pointee)
            var isDirectory = type == Int32(DT_DIR)
            if type == Int32(DT_UNKNOWN) {
                var status = stat()
                isDirectory = lstat(path + "/" + name, &status) == 0 && (status.st_mode & S_IFMT) == S_IFDIR
            }
            result.append((name, isDirectory))
        }
        return result
    }

    /// Whether `path` is a directory (not following a final symbolic link).
    static func isDirectory(_ path: String) -> Bool {
        var status = stat()
        return lstat(path, &status) == 0 && (status.st_mode & S_IFMT) == S_IFDIR
    }

    static func message(for code: Int32) -> String { String(cString: strerror(code)) }
}
