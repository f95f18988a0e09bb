import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A child process for tests (an `openssl` or `curl` run, a Python client, `LoopDemo` itself), started with
/// `posix_spawn`.
///
/// Not Foundation's `Process`: on Linux its `run()` lists `/proc/self/fd` to close every inherited
/// descriptor in the child, copying each directory entry's whole 256-byte name. With a thousand or more
/// descriptors open (the suites run in parallel, some with thousands of sockets) the copy of an entry at
/// the end of the directory buffer can run off the mapped memory, and `run()` crashed the test process
/// that way. Here the child closes every descriptor above standard error itself
/// (`posix_spawn_file_actions_addclosefrom_np`), so nothing a test holds leaks into it. Like `Process`, it
/// inherits the calling thread's signal mask.
///
/// Used from one thread at a time.
public final class ChildProcess {
    /// Where one of the child's standard streams goes.
    public enum Stream {
        /// The test process's own.
        case inherit
        /// `/dev/null`.
        case null
        /// A pipe whose other end is ``input`` or ``output``.
        case pipe
        /// A file, created or truncated for standard output and error.
        case file(String)
    }

    /// A failed system call while starting the child.
    public struct SpawnError: Error, CustomStringConvertible {
        public let call: String
        public let code: Int32
        public var description: String { "\(call): \(String(cString: strerror(code)))" }
    }

    /// The child's process id.
    public let pid: pid_t
    /// The write end of the child's standard input, when it is a ``Stream/pipe``.
    public let input: FileHandle?
    /// The read end of the child's standard output, when it is a ``Stream/pipe``.
    public let output: FileHandle?
    private var exitStatus: Int32?

    /// Starts `executable` (a path) with `arguments` (without the program name).
    public init(_ executable: String, _ arguments: [String], input: Stream = .null, output: Stream = .pipe,
                errors: Stream = .null) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        var childEnds: [Int32] = []
        var parentEnds: [Int32: Int32] = [:]
        defer { for fd in childEnds { close(fd) } }
        for (fd, stream) in [(STDIN_FILENO, input), (STDOUT_FILENO, output), (STDERR_FILENO, errors)] {
            switch stream {
            case .inherit:
                break
            case .null:
                posix_spawn_file_actions_addopen(&actions, fd, "/dev/null", fd == STDIN_FILENO ? O_RDONLY : O_WRONLY, 0)
            case .file(let path):
                posix_spawn_file_actions_addopen(&actions, fd, path,
                                                 fd == STDIN_FILENO ? O_RDONLY : O_WRONLY | O_CREAT | O_TRUNC, 0o644)
            case .pipe:
                var ends: [Int32] = [0, 0]
                guard makePipe(&ends, O_CLOEXEC) == 0 else {
                    for fd in parentEnds.values { close(fd) }
                    throw SpawnError(call: "pipe2", code: errno)
                }
                let (childEnd, parentEnd) = fd == STDIN_FILENO ? (ends[0], ends[1]) : (ends[1], ends[0])
                posix_spawn_file_actions_adddup2(&actions, childEnd, fd)
                childEnds.append(childEnd)
                parentEnds[fd] = parentEnd
            }
        }
        _ = addCloseFrom(&actions, STDERR_FILENO + 1)

        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { for argument in argv { free(argument) } }
        var pid = pid_t()
        let result = posix_spawn(&pid, executable, &actions, nil, argv, environ)
        guard result == 0 else {
            for fd in parentEnds.values { close(fd) }
            throw SpawnError(call: "posix_spawn \(executable)", code: result)
        }
        self.pid = pid
        self.input = parentEnds[STDIN_FILENO].map { FileHandle(fileDescriptor: $0, closeOnDealloc: true) }
        self.output = parentEnds[STDOUT_FILENO].map { FileHandle(fileDescriptor: $0, closeOnDealloc: true) }
    }

    /// Waits for the child to end; returns its exit status, or 128 + the number of the signal that ended it.
    @discardableResult
    public func waitUntilExit() -> Int32 {
        if let exitStatus { return exitStatus }
        var raw: Int32 = 0
        while waitpid(pid, &raw, 0) < 0 && errno == EINTR {}
        return record(raw)
    }

    /// Whether the child has not ended yet (reaping it if it has).
    public var isRunning: Bool {
        guard exitStatus == nil else { return false }
        var raw: Int32 = 0
        guard waitpid(pid, &raw, WNOHANG) == pid else { return true }
        record(raw)
        return false
    }

    /// Sends `signal` (default `SIGTERM`) to a child that is still running.
    public func terminate(_ signal: Int32 = SIGTERM) {
        if isRunning { kill(pid, signal) }
    }

    @discardableResult
    private func record(_ raw: Int32) -> Int32 {
        let status = raw & 0x7f == 0 ? (raw >> 8) & 0xff : 128 + raw & 0x7f
        exitStatus = status
        return status
    }

    /// A child nobody waited for is killed and reaped, so no test leaves a process or a zombie behind.
    deinit {
        if exitStatus == nil {
            kill(pid, SIGKILL)
            waitUntilExit()
        }
    }
}

/// glibc's `pipe2`, which Swift's Glibc module does not export.
@_silgen_name("pipe2")
private func makePipe(_ ends: UnsafeMutablePointer<Int32>, _ flags: Int32) -> Int32

/// glibc 2.34's `posix_spawn_file_actions_addclosefrom_np`, which Swift's Glibc module does not export.
@_silgen_name("posix_spawn_file_actions_addclosefrom_np")
private func addCloseFrom(_ actions: UnsafeMutablePointer<posix_spawn_file_actions_t>, _ from: Int32) -> Int32
