import CLoopKit
import LoopKit

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

// lk_fs_*: file-system calls on the shared work pool, completions on the loop (EventLoop.offload).

/// A system call's outcome: its result, or the errno it failed with.
private enum FileOutcome: Sendable {
    case done(Int64)
    case failed(Int32)
}

/// Runs `call` on the shared pool and `cb` with its outcome on the loop's thread (R13).
private func offloadFileCall(_ loopHandle: OpaquePointer?, _ cb: lk_fs_fn?, _ ctx: UnsafeMutableRawPointer?,
                             _ call: @escaping @Sendable () -> FileOutcome) -> Int32 {
    guard let loop = Handles.borrow(loopHandle, as: EventLoop.self) else { return Status.invalid }
    let context = Context(ctx)
    do {
        try loop.offload({ call() }) { result in
            switch result {
            case .success(.done(let value)):
                cb?(context.pointer, Status.ok, value)
            case .success(.failed(let code)):
                cb?(context.pointer, Status.failedSystemCall(errno: code), Int64(code))
            case .failure:
                cb?(context.pointer, Status.cancelled, 0)
            }
        }
        return Status.ok
    } catch {
        return Status.of(error)
    }
}

/// Runs `body` (a system call returning -1 with errno on failure) again while it fails with EINTR.
private func retrying(_ body: () -> Int) -> FileOutcome {
    while true {
        let result = body()
        if result >= 0 { return .done(Int64(result)) }
        if errno != EINTR { return .failed(errno) }
    }
}

@c @implementation
public func lk_fs_open(_ loop: OpaquePointer!, _ path: UnsafePointer<CChar>!, _ flags: Int32, _ mode: Int32,
                       _ cb: lk_fs_fn!, _ ctx: UnsafeMutableRawPointer!) -> Int32 {
    guard let path else { return Status.invalid }
    let copy = String(cString: path)
    return offloadFileCall(loop, cb, ctx) { retrying { Int(open(copy, flags | O_CLOEXEC, mode_t(mode))) } }
}

@c @implementation
public func lk_fs_close(_ loop: OpaquePointer!, _ fd: Int32, _ cb: lk_fs_fn!, _ ctx: UnsafeMutableRawPointer!) -> Int32 {
    guard fd >= 0 else { return Status.invalid }
    // Never retried: Linux frees the descriptor even when close fails.
    return offloadFileCall(loop, cb, ctx) { close(fd) == 0 ? .done(0) : .failed(errno) }
}

@c @implementation
public func lk_fs_read(_ loop: OpaquePointer!, _ fd: Int32, _ buffer: UnsafeMutableRawPointer!, _ count: Int,
                       _ offset: Int64, _ cb: lk_fs_fn!, _ ctx: UnsafeMutableRawPointer!) -> Int32 {
    guard fd >= 0, let buffer else { return Status.invalid }
    let target = Context(buffer)
    return offloadFileCall(loop, cb, ctx) {
        retrying { offset >= 0 ? pread(fd, target.pointer, count, off_t(offset)) : read(fd, target.pointer, count) }
    }
}

@c @implementation
public func lk_fs_write(_ loop: OpaquePointer!, _ fd: Int32, _ buffer: UnsafeRawPointer!, _ count: Int,
                        _ offset: Int64, _ cb: lk_fs_fn!, _ ctx: UnsafeMutableRawPointer!) -> Int32 {
    guard fd >= 0, let buffer else { return Status.invalid }
    let source = Context(UnsafeMutableRawPointer(mutating: buffer))
    return offloadFileCall(loop, cb, ctx) {
        var done = 0
        while done < count {
            let start = source.pointer! + done
            let step = retrying {
                offset >= 0 ? pwrite(fd, start, count - done, off_t(offset) + off_t(done)) : write(fd, start, count - done)
            }
            switch step {
            case .done(let wrote): done += Int(wrote)
            case .failed: return step
            }
        }
        return .done(Int64(count))
    }
}

@c @implementation
public func lk_fs_stat(_ loop: OpaquePointer!, _ path: UnsafePointer<CChar>!, _ out: UnsafeMutablePointer<lk_fs_info>!,
                       _ cb: lk_fs_fn!, _ ctx: UnsafeMutableRawPointer!) -> Int32 {
    guard let path, let out else { return Status.invalid }
    let copy = String(cString: path)
    let target = Context(UnsafeMutableRawPointer(out))
    return offloadFileCall(loop, cb, ctx) {
        var status = stat()
        guard stat(copy, &status) == 0 else { return .failed(errno) }
        target.typed(lk_fs_info.self)?.pointee = lk_fs_info(
            size: UInt64(status.st_size), mode: UInt32(status.st_mode), mtime_sec: Int64(status.st_mtim.tv_sec),
            mtime_nsec: Int32(status.st_mtim.tv_nsec), inode: UInt64(status.st_ino))
        return .done(0)
    }
}

@c @implementation
public func lk_fs_unlink(_ loop: OpaquePointer!, _ path: UnsafePointer<CChar>!, _ cb: lk_fs_fn!,
                         _ ctx: UnsafeMutableRawPointer!) -> Int32 {
    guard let path else { return Status.invalid }
    let copy = String(cString: path)
    return offloadFileCall(loop, cb, ctx) { unlink(copy) == 0 ? .done(0) : .failed(errno) }
}

@c @implementation
public func lk_fs_rename(_ loop: OpaquePointer!, _ from: UnsafePointer<CChar>!, _ to: UnsafePointer<CChar>!,
                         _ cb: lk_fs_fn!, _ ctx: UnsafeMutableRawPointer!) -> Int32 {
    guard let from, let to else { return Status.invalid }
    let source = String(cString: from), destination = String(cString: to)
    return offloadFileCall(loop, cb, ctx) { rename(source, destination) == 0 ? .done(0) : .failed(errno) }
}

@c @implementation
public func lk_fs_mkdir(_ loop: OpaquePointer!, _ path: UnsafePointer<CChar>!, _ mode: Int32, _ cb: lk_fs_fn!,
                        _ ctx: UnsafeMutableRawPointer!) -> Int32 {
    guard let path else { return Status.invalid }
    let copy = String(cString: path)
    return offloadFileCall(loop, cb, ctx) { mkdir(copy, mode_t(mode)) == 0 ? .done(0) : .failed(errno) }
}
