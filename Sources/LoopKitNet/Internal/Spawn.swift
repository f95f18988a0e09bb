import LoopKit

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

// The one file of LoopKitNet with process system calls (`posix_spawn`, pidfds, `waitid`), as Socket.swift is
// for sockets. Everything above it sees Swift types.

/// glibc 2.36's pidfd wrappers, `pipe2` and `posix_spawn_file_actions_addchdir_np`, which Swift's Glibc
/// module does not declare (they need `_GNU_SOURCE`).
@_silgen_name("pidfd_open")
private func systemPidfdOpen(_ pid: pid_t, _ flags: UInt32) -> Int32
@_silgen_name("pidfd_send_signal")
private func systemPidfdSendSignal(_ pidfd: Int32, _ signal: Int32, _ info: UnsafeMutableRawPointer?, _ flags: UInt32) -> Int32
@_silgen_name("pipe2")
private func systemPipe2(_ fds: UnsafeMutablePointer<Int32>, _ flags: Int32) -> Int32
@_silgen_name("posix_spawn_file_actions_addchdir_np")
private func systemAddChdir(_ actions: UnsafeMutablePointer<posix_spawn_file_actions_t>, _ path: UnsafePointer<CChar>) -> Int32

/// Process system calls.
enum Spawn {
    /// What the child's descriptor 0, 1 or 2 becomes.
    enum Slot {
        /// The parent's own descriptor.
        case inherit
        /// `/dev/null`, opened for reading (stdin) or writing.
        case null
        /// This end of a pipe (the parent keeps the other).
        case descriptor(Int32)
    }

    /// Where a name without a slash is looked up: the `PATH` of `environment` (the child's) when it has one,
    /// else this process's `PATH`, else `/bin:/usr/bin` (as `execvp`).
    static func searchPath(for environment: [String]?) -> String {
        if let environment, let entry = environment.last(where: { $0.hasPrefix("PATH=") }) {
            return String(entry.dropFirst(5))
        }
        if let value = getenv("PATH") { return String(cString: value) }
        return "/bin:/usr/bin"
    }

    /// The first regular, executable file named `name` in the directories of `searchPath` (an empty entry is
    /// the current directory), as `posix_spawnp` finds it. The corresponding system calls are `stat` and
    /// `access(X_OK)`.
    static func find(_ name: String, in searchPath: String) throws(ProcessError) -> String {
        var foundButNotExecutable = false
        for directory in searchPath.split(separator: ":", omittingEmptySubsequences: false) {
            let candidate = (directory.isEmpty ? "." : String(directory)) + "/" + name
            var status = stat()
            guard stat(candidate, &status) == 0, status.st_mode & S_IFMT == S_IFREG else { continue }
            if access(candidate, X_OK) == 0 { return candidate }
            foundButNotExecutable = true
        }
        if foundButNotExecutable { throw .permissionDenied("\(name) (found in PATH, not executable)") }
        throw .notFoundInPath(name, searchPath: searchPath)
    }

    /// A pipe: `read` and `write` ends, close-on-exec; the parent's end (`nonBlockingEnd`) non-blocking.
    static func pipe(nonBlockingEnd: Int) throws(ProcessError) -> (read: Int32, write: Int32) {
        var fds: [Int32] = [-1, -1]
        guard systemPipe2(&fds, O_CLOEXEC) == 0 else { throw .system("pipe2", errno) }
        let end = fds[nonBlockingEnd]
        _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK)
        return (fds[0], fds[1])
    }

    /// Spawns `path` with `arguments` (argv[0] first), `environment` (nil: the parent's), in `directory`
    /// (nil: the parent's), in a new process group when asked, with stdio as `slots`. Signals the parent
    /// ignores (LoopKitNet ignores SIGPIPE) are reset to their defaults and the signal mask is emptied.
    /// The corresponding call is `posix_spawn` (glibc: `clone(CLONE_VM | CLONE_VFORK)`).
    static func spawn(path: String, arguments: [String], environment: [String]?, directory: String?, newProcessGroup: Bool,
                      slots: [Slot]) throws(ProcessError) -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }

        for (target, slot) in slots.enumerated() {
            switch slot {
            case .inherit: break
            case .null: posix_spawn_file_actions_addopen(&actions, Int32(target), "/dev/null", target == 0 ? O_RDONLY : O_WRONLY, 0)
            case .descriptor(let fd): posix_spawn_file_actions_adddup2(&actions, fd, Int32(target))
            }
        }
        if let directory {
            let code = directory.withCString { systemAddChdir(&actions, $0) }
            guard code == 0 else { throw .system("posix_spawn_file_actions_addchdir_np", code) }
        }
        var flags = Int32(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK)
        if newProcessGroup {
            flags |= Int32(POSIX_SPAWN_SETPGROUP)
            posix_spawnattr_setpgroup(&attributes, 0)
        }
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGPIPE, SIGINT, SIGQUIT, SIGTERM, SIGCHLD, SIGHUP, SIGUSR1, SIGUSR2] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        var empty = sigset_t()
        sigemptyset(&empty)
        posix_spawnattr_setsigmask(&attributes, &empty)
        posix_spawnattr_setflags(&attributes, Int16(flags))

        let argv = arguments.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        let envp: [UnsafeMutablePointer<CChar>?]? = environment.map { $0.map { strdup($0) } + [nil] }
        defer { for pointer in envp ?? [] { free(pointer) } }
        var pid: pid_t = 0
        let code: Int32 = argv.withUnsafeBufferPointer { args in
            if let envp {
                return envp.withUnsafeBufferPointer { env in
                    posix_spawn(&pid, path, &actions, &attributes, args.baseAddress!, env.baseAddress!)
                }
            }
            return posix_spawn(&pid, path, &actions, &attributes, args.baseAddress!, environ)
        }
        guard code == 0 else {
            if let directory, code == ENOENT || code == ENOTDIR || code == EACCES, access(directory, X_OK) != 0 {
                throw .invalidArgument("cannot enter the working directory \(directory): \(String(cString: strerror(code)))")
            }
            switch code {
            case ENOENT: throw .executableNotFound(path)
            case EACCES, EPERM: throw .permissionDenied(path)
            default: throw .system("posix_spawn", code)
            }
        }
        return pid
    }

    /// A pidfd for `pid`: readable once the process has ended. The corresponding call is `pidfd_open`.
    static func open(_ pid: pid_t) -> Int32 {
        let fd = systemPidfdOpen(pid, 0)
        return fd >= 0 ? fd : -errno
    }

    /// Sends `signal` through a pidfd (never to a recycled pid). 0 or the `errno`.
    static func send(_ signal: Int32, to pidfd: Int32) -> Int32 {
        systemPidfdSendSignal(pidfd, signal, nil, 0) == 0 ? 0 : errno
    }

    /// Sends `signal` to every process of the group `groupID` (`kill(-groupID, signal)`). 0 or the `errno`
    /// (`ESRCH`: the group has no member left). A group's id is its leader's pid, which the kernel does not
    /// give to a new process while any member of the group lives.
    static func send(_ signal: Int32, toGroup groupID: pid_t) -> Int32 {
        kill(-groupID, signal) == 0 ? 0 : errno
    }

    /// Whether the group `groupID` still has a member. The corresponding call is `kill(-groupID, 0)`.
    static func groupHasMembers(_ groupID: pid_t) -> Bool {
        kill(-groupID, 0) == 0 || errno == EPERM
    }

    /// Reaps the process of `pidfd` if it has ended: how it ended, or nil while it runs. The corresponding
    /// call is `waitid(P_PIDFD, fd, WEXITED | WNOHANG)`.
    static func reap(_ pidfd: Int32) -> ProcessTermination? {
        // siginfo_t: si_signo, si_errno, si_code (ints at 0, 4, 8), then for SIGCHLD si_pid, si_uid, si_status
        // at 16, 20, 24. A zeroed si_pid after WNOHANG means "still running".
        var info = siginfo_t()
        let pPidfd = idtype_t(rawValue: 3)  // P_PIDFD
        let result = waitid(pPidfd, id_t(pidfd), &info, WEXITED | WNOHANG)
        guard result == 0 else { return nil }
        return withUnsafeBytes(of: &info) { raw -> ProcessTermination? in
            let pid = raw.load(fromByteOffset: 16, as: Int32.self)
            guard pid != 0 else { return nil }
            let code = raw.load(fromByteOffset: 8, as: Int32.self)
            let status = raw.load(fromByteOffset: 24, as: Int32.self)
            return code == Int32(CLD_EXITED) ? .exited(status) : .signaled(status)
        }
    }

    /// Waits (blocking) until the process of `pidfd` has ended, and reaps it: for a process just sent
    /// `SIGKILL`. The corresponding calls are `poll` and `waitid`.
    static func waitUntilEnded(_ pidfd: Int32) -> ProcessTermination {
        while true {
            if let termination = reap(pidfd) { return termination }
            var ready = pollfd(fd: pidfd, events: Int16(POLLIN), revents: 0)
            if poll(&ready, 1, 1000) < 0 && errno != EINTR { return .signaled(SIGKILL) }
        }
    }

    /// Kills and reaps `pid` (blocking): for a child whose pidfd could not be had.
    static func killAndReap(_ pid: pid_t) {
        _ = kill(pid, SIGKILL)
        var status: Int32 = 0
        _ = waitpid(pid, &status, 0)
    }

    /// Closes a descriptor.
    static func close(_ fd: Int32) {
        if fd >= 0 { Socket.close(fd) }
    }
}
