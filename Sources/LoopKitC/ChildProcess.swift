import CLoopKit
import LoopKit
import LoopKitNet

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

// Child processes from C: lk_child_* over LoopKitNet's ChildProcess (lk_process is the array processor's).

/// The `lk_child` handle: a child process, the host's callbacks, and whether one of them is running (a free
/// from inside one releases the handle when it returns). Loop-confined: every function but lk_child_pid
/// checks the thread before touching it.
final class CChild {
    let process: ChildProcess
    let context: Context
    var onExit: lk_child_exit_fn?
    var onOutput: lk_child_output_fn?
    var onStdinWritable: lk_child_writable_fn?
    /// The handle C holds (one retain), set once it is handed out; nil once released.
    var handle: OpaquePointer?
    /// Callbacks running now.
    var depth = 0
    var freed = false

    init(process: ChildProcess, context: Context, onExit: lk_child_exit_fn?, onOutput: lk_child_output_fn?) {
        self.process = process
        self.context = context
        self.onExit = onExit
        self.onOutput = onOutput
    }

    var loop: EventLoop { process.loop }

    func tellExit(_ termination: ProcessTermination) {
        guard !freed, let onExit else { return }
        let (status, signal): (Int32, Int32) = switch termination {
        case .exited(let code): (code, 0)
        case .signaled(let number): (0, number)
        }
        depth += 1
        onExit(context.pointer, handle, status, signal)
        depth -= 1
        releaseIfFreed()
    }

    func tellOutput(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) {
        guard !freed, let onOutput else { return }
        depth += 1
        onOutput(context.pointer, handle, fd, bytes.baseAddress, bytes.count)
        depth -= 1
        releaseIfFreed()
    }

    /// Standard input drained below its low-water mark: the host may write again — unless it closed
    /// standard input meanwhile (a drain that a close started tells nothing: there is nothing to write).
    func tellStdinWritable() {
        guard !freed, let onStdinWritable else { return }
        guard let input = process.standardInput, !input.isClosed, !input.isClosing else { return }
        depth += 1
        onStdinWritable(context.pointer, handle)
        depth -= 1
        releaseIfFreed()
    }

    /// Stops every callback and closes the pipes; the handle goes when no callback runs.
    func free() {
        freed = true
        onExit = nil
        onOutput = nil
        onStdinWritable = nil
        process.standardInput?.close()
        process.standardOutput?.close()
        process.standardError?.close()
        releaseIfFreed()
    }

    private func releaseIfFreed() {
        guard freed, depth == 0, let handle else { return }
        self.handle = nil
        Handles.release(handle, as: CChild.self)
    }
}

extension Status {
    /// The status code for a child process's error (the `errno` kept for `lk_last_errno` where one applies).
    static func of(_ error: ProcessError) -> Int32 {
        switch error {
        case .executableNotFound, .notFoundInPath: failedSystemCall(errno: ENOENT)
        case .permissionDenied: failedSystemCall(errno: EACCES)
        case .invalidArgument: invalid
        case .loopShutDown: closed
        case .system(_, let code): failedSystemCall(errno: code)
        }
    }
}

/// The child behind a handle, when called on its loop's thread; else the status to return.
private func child(_ handle: OpaquePointer?) -> Result<CChild, ChildCallRefusal> {
    guard let child = Handles.borrow(handle, as: CChild.self) else { return .failure(ChildCallRefusal(status: Status.invalid)) }
    guard child.loop.isCurrent else { return .failure(ChildCallRefusal(status: Status.wrongThread)) }
    return .success(child)
}

/// Why a call was refused before it reached the child.
private struct ChildCallRefusal: Error {
    let status: Int32
}

/// A NULL-terminated array of C strings, or nil for NULL.
private func strings(_ array: UnsafePointer<UnsafePointer<CChar>?>?) -> [String]? {
    guard let array else { return nil }
    var result: [String] = []
    var index = 0
    while let string = array[index] {
        result.append(String(cString: string))
        index += 1
    }
    return result
}

/// A stdio value from C, or nil when it does not exist.
private func standardIO(_ value: Int32) -> ChildProcess.StandardIO? {
    switch value {
    case Int32(LK_CHILD_INHERIT): .inherit
    case Int32(LK_CHILD_NULL): .null
    case Int32(LK_CHILD_PIPE): .pipe
    default: nil
    }
}

@c @implementation
public func lk_child_spawn(
    _ loopHandle: OpaquePointer!, _ options: UnsafePointer<lk_child_options>!,
    _ onExit: lk_child_exit_fn!, _ onOutput: lk_child_output_fn!,
    _ ctx: UnsafeMutableRawPointer!, _ out: UnsafeMutablePointer<OpaquePointer?>!
) -> Int32 {
    guard let loop = Handles.borrow(loopHandle, as: EventLoop.self), let options, let out,
          let file = options.pointee.file else { return Status.invalid }
    guard loop.isCurrent else { return Status.wrongThread }
    let settings = options.pointee
    guard let input = standardIO(settings.stdio.0), let output = standardIO(settings.stdio.1),
          let error = standardIO(settings.stdio.2),
          settings.flags & ~UInt32(LK_CHILD_NEW_PROCESS_GROUP) == 0 else { return Status.invalid }
    let process: ChildProcess
    do {
        process = try ChildProcess.spawn(
            String(cString: file), arguments: strings(settings.args) ?? [], environment: strings(settings.env),
            workingDirectory: settings.cwd.map { String(cString: $0) },
            newProcessGroup: settings.flags & UInt32(LK_CHILD_NEW_PROCESS_GROUP) != 0,
            standardInput: input, standardOutput: output, standardError: error,
            timeout: settings.timeout_ns > 0 ? .nanoseconds(Int64(clamping: settings.timeout_ns)) : nil, on: loop)
    } catch {
        return Status.of(error)
    }
    let child = CChild(process: process, context: Context(ctx), onExit: onExit, onOutput: onOutput)
    let handle = Handles.retain(child)
    child.handle = handle
    process.onExit { [weak child] termination in child?.tellExit(termination) }
    process.standardInput?.onWritable { [weak child] in child?.tellStdinWritable() }
    for (fd, connection) in [(Int32(1), process.standardOutput), (Int32(2), process.standardError)] {
        guard let connection else { continue }
        connection.onRead { [weak child] bytes in
            child?.tellOutput(fd, bytes)
            return bytes.count
        }
        connection.onClose { [weak child] _ in child?.tellOutput(fd, UnsafeRawBufferPointer(start: nil, count: 0)) }
    }
    Handles.store(handle, in: out)
    return Status.ok
}

@c @implementation
public func lk_child_pid(_ handle: OpaquePointer!) -> Int32 {
    guard let child = Handles.borrow(handle, as: CChild.self) else { return Status.invalid }
    return child.process.pid
}

@c @implementation
public func lk_child_kill(_ handle: OpaquePointer!, _ signum: Int32) -> Int32 {
    switch child(handle) {
    case .failure(let refusal): return refusal.status
    case .success(let child):
        guard (1...64).contains(signum) else { return Status.invalid }
        do {
            try child.process.kill(signum)
            return Status.ok
        } catch {
            return Status.of(error)
        }
    }
}

@c @implementation
public func lk_child_terminate(_ handle: OpaquePointer!, _ grace: UInt64) -> Int32 {
    switch child(handle) {
    case .failure(let refusal): return refusal.status
    case .success(let child):
        child.process.terminate(gracePeriod: .nanoseconds(Int64(clamping: grace)))
        return Status.ok
    }
}

@c @implementation
public func lk_child_write(_ handle: OpaquePointer!, _ data: UnsafeRawPointer!, _ length: Int) -> Int32 {
    switch child(handle) {
    case .failure(let refusal): return refusal.status
    case .success(let child):
        guard data != nil || length == 0, length >= 0, let input = child.process.standardInput else { return Status.invalid }
        guard !input.isClosed, !input.isClosing else { return Status.closed }
        guard input.isWritable else { return Status.again }
        do {
            try input.write(copying: UnsafeRawBufferPointer(start: data, count: length))
            return Status.ok
        } catch {
            return Status.closed
        }
    }
}

@c @implementation
public func lk_child_on_stdin_writable(_ handle: OpaquePointer!, _ onWritable: lk_child_writable_fn!) -> Int32 {
    switch child(handle) {
    case .failure(let refusal): return refusal.status
    case .success(let child):
        guard let input = child.process.standardInput else { return Status.invalid }
        guard !input.isClosed, !input.isClosing else { return Status.closed }
        child.onStdinWritable = onWritable
        return Status.ok
    }
}

@c @implementation
public func lk_child_close_stdin(_ handle: OpaquePointer!) -> Int32 {
    switch child(handle) {
    case .failure(let refusal): return refusal.status
    case .success(let child):
        guard let input = child.process.standardInput else { return Status.invalid }
        guard !input.isClosed, !input.isClosing else { return Status.closed }
        input.close()
        return Status.ok
    }
}

@c @implementation
public func lk_child_free(_ handle: OpaquePointer!) -> Int32 {
    switch child(handle) {
    case .failure(let refusal): return refusal.status
    case .success(let child):
        guard !child.freed else { return Status.invalid }
        child.free()
        return Status.ok
    }
}
