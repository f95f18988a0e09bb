import CLoopKit
import LoopKit

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

// lk_fs_scandir: a directory's entries, read on the shared work pool and lent to the host's callback on the loop.
//
// The pool thread fills Swift values of its own (names as bytes, never the host's memory); the loop's thread
// lays them out as C strings and lk_fs_dirent values for the length of the callback, then frees them.

/// One entry as the pool thread read it: the name's bytes (as readdir gave them, not necessarily UTF-8) and its
/// `LK_FS_DIRENT_*` type.
private struct ScannedEntry: Sendable {
    let name: [UInt8]
    let type: Int32
}

/// What a scan found: the entries sorted by name, or the errno `opendir` or `readdir` failed with.
private enum ScanOutcome: Sendable {
    case listed([ScannedEntry])
    case failed(Int32)
}

/// The `LK_FS_DIRENT_*` type of a `d_type` value, or nil for `DT_UNKNOWN` (the file system does not say).
private func direntType(_ type: Int32) -> Int32? {
    switch type {
    case Int32(DT_REG): Int32(LK_FS_DIRENT_FILE)
    case Int32(DT_DIR): Int32(LK_FS_DIRENT_DIR)
    case Int32(DT_LNK): Int32(LK_FS_DIRENT_LINK)
    case Int32(DT_FIFO): Int32(LK_FS_DIRENT_FIFO)
    case Int32(DT_SOCK): Int32(LK_FS_DIRENT_SOCKET)
    case Int32(DT_CHR): Int32(LK_FS_DIRENT_CHAR)
    case Int32(DT_BLK): Int32(LK_FS_DIRENT_BLOCK)
    case Int32(DT_UNKNOWN): nil
    default: Int32(LK_FS_DIRENT_UNKNOWN)
    }
}

/// The `LK_FS_DIRENT_*` type of an `st_mode`.
private func direntType(mode: mode_t) -> Int32 {
    switch mode & S_IFMT {
    case S_IFREG: Int32(LK_FS_DIRENT_FILE)
    case S_IFDIR: Int32(LK_FS_DIRENT_DIR)
    case S_IFLNK: Int32(LK_FS_DIRENT_LINK)
    case S_IFIFO: Int32(LK_FS_DIRENT_FIFO)
    case S_IFSOCK: Int32(LK_FS_DIRENT_SOCKET)
    case S_IFCHR: Int32(LK_FS_DIRENT_CHAR)
    case S_IFBLK: Int32(LK_FS_DIRENT_BLOCK)
    default: Int32(LK_FS_DIRENT_UNKNOWN)
    }
}

/// On a pool thread: every entry of `path` (its bytes and their NUL) but "." and "..", sorted by name as strcmp
/// orders them.
private func scan(_ path: [CChar]) -> ScanOutcome {
    guard let directory = opendir(path) else { return .failed(errno) }
    defer { closedir(directory) }
    var entries: [ScannedEntry] = []
    while true {
        errno = 0
        guard let entry = readdir(directory) else {
            if errno != 0 { return .failed(errno) }
            break
        }
        // The name in place, up to its NUL: readdir fills d_reclen bytes, often fewer than a whole struct
        // dirent, so neither the struct nor its d_name array is copied (that reads bytes the kernel never wrote).
        let namePointer = UnsafeRawPointer(entry.pointer(to: \.d_name)!)
        let length = strlen(namePointer.assumingMemoryBound(to: CChar.self))
        let name = [UInt8](UnsafeRawBufferPointer(start: namePointer, count: length))
        if name == [0x2E] || name == [0x2E, 0x2E] { continue }  // "." and ".."
        var type = direntType(Int32(entry.pointer(to: \.d_type)!.pointee))
        if type == nil {
            var status = stat()
            let full = path.dropLast() + [0x2F] + name.map { CChar(bitPattern: $0) } + [0]
            let found = full.withUnsafeBufferPointer { lstat($0.baseAddress!, &status) == 0 }
            type = found ? direntType(mode: status.st_mode) : Int32(LK_FS_DIRENT_UNKNOWN)
        }
        entries.append(ScannedEntry(name: name, type: type!))
    }
    entries.sort { $0.name.lexicographicallyPrecedes($1.name) }
    return .listed(entries)
}

/// Lends `entries` to `body` as C: one block of NUL-terminated names and an array of lk_fs_dirent pointing into it.
private func withDirents(_ entries: [ScannedEntry], _ body: (UnsafePointer<lk_fs_dirent>?, Int) -> Void) {
    guard !entries.isEmpty else { return body(nil, 0) }
    var names: [UInt8] = []
    names.reserveCapacity(entries.reduce(0) { $0 + $1.name.count + 1 })
    var offsets: [Int] = []
    offsets.reserveCapacity(entries.count)
    for entry in entries {
        offsets.append(names.count)
        names.append(contentsOf: entry.name)
        names.append(0)
    }
    names.withUnsafeBufferPointer { bytes in
        bytes.withMemoryRebound(to: CChar.self) { characters in
            let dirents = entries.indices.map { index in
                lk_fs_dirent(name: characters.baseAddress! + offsets[index], type: entries[index].type)
            }
            dirents.withUnsafeBufferPointer { body($0.baseAddress, $0.count) }
        }
    }
}

@c @implementation
public func lk_fs_scandir(_ loop: OpaquePointer!, _ path: UnsafePointer<CChar>!, _ cb: lk_fs_scandir_fn!,
                          _ ctx: UnsafeMutableRawPointer!, _ out: UnsafeMutablePointer<OpaquePointer?>!) -> Int32 {
    guard let path else { return Status.invalid }
    let copy = Array(UnsafeBufferPointer(start: path, count: strlen(path) + 1))  // the bytes as given, not a String
    let context = Context(ctx)
    return offloadFileRequest(loop, out: out, { scan(copy) }) { result in
        switch result {
        case .success(.listed(let entries)):
            withDirents(entries) { dirents, count in cb?(context.pointer, Status.ok, dirents, count) }
        case .success(.failed(let code)):
            cb?(context.pointer, Status.failedSystemCall(errno: code), nil, 0)
        case .failure:
            cb?(context.pointer, Status.cancelled, nil, 0)
        }
    }
}
