import LoopKit

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A child process started on an `EventLoop` with `posix_spawn`, its exit observed on the loop through a
/// pidfd (no `SIGCHLD` handler is taken from the host) and reaped with `waitid(P_PIDFD)`.
///
/// ```swift
/// let child = try ChildProcess.spawn("/bin/sh", arguments: ["-c", "tr a-z A-Z"], on: loop)
/// try child.standardInput!.write(Bytes("hello"))
/// child.standardInput!.close()                    // end of input
/// let termination = await child.termination       // .exited(0)
/// ```
///
/// Standard input, output and error are each ``StandardIO/pipe`` (a ``TCPConnection`` over a pipe, with its
/// backpressure: a child that floods its output is stopped by the read high-water mark), ``StandardIO/inherit``
/// or ``StandardIO/null``. Close ``standardInput`` to give the child end of file. ``ChildProcess/run(_:arguments:environment:workingDirectory:input:outputLimit:timeout:on:)``
/// collects the output of a command.
///
/// The exit is told exactly once, on the loop, in phase 2 of the iteration whose poll found the pidfd
/// readable (rule R15): ``onExit(_:)`` handlers, then tasks awaiting ``termination`` go on in that
/// iteration's drain. The loop's shutdown kills a child still running (`SIGKILL`) and reaps it.
///
/// **Thread rule**: confined to its loop. Call every method and property on the loop's thread (checked with
/// a precondition), except ``loop`` and ``pid``, which are safe from any thread. The corresponding libuv call
/// is `uv_spawn`.
public final class ChildProcess: @unchecked Sendable {  // loop-confined: every entry point checks the thread
    /// What a child's standard input, output or error is.
    public enum StandardIO: Sendable, Hashable {
        /// A pipe to this process, as a ``TCPConnection`` on the loop.
        case pipe
        /// This process's own descriptor.
        case inherit
        /// `/dev/null`.
        case null
    }

    /// The loop the process is observed on. Safe from any thread.
    public let loop: EventLoop
    /// The process id. Safe from any thread.
    public let pid: Int32
    /// The write end of the child's standard input, when it is ``StandardIO/pipe``; close it for end of
    /// file. Call on the loop's thread.
    public let standardInput: TCPConnection?
    /// The read end of the child's standard output, when it is ``StandardIO/pipe``. Call on the loop's thread.
    public let standardOutput: TCPConnection?
    /// The read end of the child's standard error, when it is ``StandardIO/pipe``. Call on the loop's thread.
    public let standardError: TCPConnection?

    private var pidfd: Int32
    private var exitWatch: Watch?
    private var ended: ProcessTermination?
    private var exitHandlers: [(ProcessTermination) -> Void] = []
    private var waiters: [UnsafeContinuation<ProcessTermination, Never>] = []
    private var killTimer: ScheduledTimer?
    private var timeoutTimer: ScheduledTimer?
    /// The process's own reference, held while it runs.
    private var keepAlive: Unmanaged<ChildProcess>?
    /// The timeout given to `spawn` expired and the process was terminated. Call on the loop's thread.
    public private(set) var timedOut = false

    /// Starts `executable` on `loop`.
    ///
    /// - Parameters:
    ///   - executable: A path, such as `/bin/sh`; or a name without a `/`, such as `sh`, looked up as
    ///     `posix_spawnp` does in the `PATH` of `environment` when it has one, else in this process's `PATH`
    ///     (the first regular, executable file; argv[0] stays the name).
    ///   - arguments: The arguments after argv[0] (which is `executable`).
    ///   - environment: `NAME=value` strings, or nil for this process's environment.
    ///   - workingDirectory: The child's directory, or nil for this process's
    ///     (`posix_spawn_file_actions_addchdir_np`).
    ///   - newProcessGroup: The child leads a new process group (its pid is the group id), so a terminal's
    ///     signals to this process's group do not reach it.
    ///   - standardInput: A pipe (default), inherited or `/dev/null`.
    ///   - standardOutput: A pipe (default), inherited or `/dev/null`.
    ///   - standardError: A pipe (default), inherited or `/dev/null`.
    ///   - timeout: Terminate the child (``terminate(gracePeriod:)`` with a 1 s grace) if it still runs then.
    ///   - loop: The loop that observes it.
    /// - Returns: The running child.
    /// - Throws: ``ProcessError/executableNotFound(_:)``, ``ProcessError/notFoundInPath(_:searchPath:)``,
    ///   ``ProcessError/permissionDenied(_:)``,
    ///   ``ProcessError/invalidArgument(_:)`` for a working directory that cannot be entered (the child never
    ///   runs), ``ProcessError/loopShutDown``, ``ProcessError/system(_:_:)``.
    ///
    /// Call on the loop's thread. The corresponding system calls are `posix_spawn` and `pidfd_open`.
    public static func spawn(
        _ executable: String, arguments: [String] = [], environment: [String]? = nil, workingDirectory: String? = nil,
        newProcessGroup: Bool = false, standardInput: StandardIO = .pipe, standardOutput: StandardIO = .pipe,
        standardError: StandardIO = .pipe, timeout: Duration? = nil, on loop: EventLoop
    ) throws(ProcessError) -> ChildProcess {
        precondition(loop.isCurrent, "ChildProcess.spawn called off its loop's thread")
        // Before anything is looked up or started: a loop that has shut down refuses, whatever the executable
        // (CABIFuzzer: a missing one gave ENOENT, an existing one was started and killed).
        guard loop.isAcceptingWork else { throw .loopShutDown }
        _ = Socket.ignoreSIGPIPE
        let path = executable.contains("/") ? executable : try Spawn.find(executable, in: Spawn.searchPath(for: environment))
        var parentEnds: [Int32?] = [nil, nil, nil]
        var childEnds: [Int32] = []
        var slots: [Spawn.Slot] = []
        func cleanUp() {
            for fd in childEnds { Spawn.close(fd) }
            for fd in parentEnds { if let fd { Spawn.close(fd) } }
        }
        for (index, mode) in [standardInput, standardOutput, standardError].enumerated() {
            switch mode {
            case .inherit: slots.append(.inherit)
            case .null: slots.append(.null)
            case .pipe:
                do throws(ProcessError) {
                    // stdin: the child reads (end 0), the parent writes (end 1, non-blocking); stdout/err: reversed.
                    let ends = try Spawn.pipe(nonBlockingEnd: index == 0 ? 1 : 0)
                    let (child, parent) = index == 0 ? (ends.read, ends.write) : (ends.write, ends.read)
                    childEnds.append(child)
                    parentEnds[index] = parent
                    slots.append(.descriptor(child))
                } catch {
                    cleanUp()
                    throw error
                }
            }
        }
        let pid: Int32
        do throws(ProcessError) {
            pid = try Spawn.spawn(path: path, arguments: [executable] + arguments, environment: environment,
                                  directory: workingDirectory, newProcessGroup: newProcessGroup, slots: slots)
        } catch {
            cleanUp()
            throw error
        }
        for fd in childEnds { Spawn.close(fd) }
        let pidfd = Spawn.open(pid)
        let profile = ConnectionProfile(options: ConnectionOptions(), isTCP: false, accepted: false)
        func connection(_ fd: Int32?) -> TCPConnection? {
            guard let fd else { return nil }
            let connection = TCPConnection(loop: loop, fd: fd, profile: profile, connected: true)
            connection.start()
            return connection
        }
        let process = ChildProcess(loop: loop, pid: pid, pidfd: pidfd, standardInput: connection(parentEnds[0]),
                                   standardOutput: connection(parentEnds[1]), standardError: connection(parentEnds[2]))
        guard pidfd >= 0 else {
            process.forceEnd(-pidfd)
            throw .system("pidfd_open", -pidfd)
        }
        try process.start(timeout: timeout)
        return process
    }

    private init(loop: EventLoop, pid: Int32, pidfd: Int32, standardInput: TCPConnection?, standardOutput: TCPConnection?,
                 standardError: TCPConnection?) {
        self.loop = loop
        self.pid = pid
        self.pidfd = pidfd
        self.standardInput = standardInput
        self.standardOutput = standardOutput
        self.standardError = standardError
    }

    /// A pidfd could not be had: the child is killed and reaped the old way (blocking; it dies at once).
    private func forceEnd(_ code: Int32) {
        Spawn.killAndReap(pid)
        standardInput?.abort()
        standardOutput?.abort()
        standardError?.abort()
    }

    private func start(timeout: Duration?) throws(ProcessError) {
        guard loop.addShutdownObserver(ObjectIdentifier(self), { [weak self] in self?.loopIsShuttingDown() }) else {
            _ = Spawn.send(SIGKILL, to: pidfd)
            loopIsShuttingDown()
            throw .loopShutDown
        }
        do {
            exitWatch = try loop.watch(pidfd, for: .readable) { [unowned self] _ in self.pidfdIsReadable() }
        } catch {
            _ = Spawn.send(SIGKILL, to: pidfd)
            loop.removeShutdownObserver(ObjectIdentifier(self))
            loopIsShuttingDown()
            throw .system("event_add", 0)
        }
        keepAlive = Unmanaged.passRetained(self)
        if let timeout {
            do {
                timeoutTimer = try loop.schedule(after: timeout) { [weak self] in
                    guard let self, self.ended == nil else { return }
                    self.timedOut = true
                    self.terminate(gracePeriod: .seconds(1))
                }
            } catch {
                // Refused only once the loop shuts down, which kills the child: no timeout is needed.
            }
        }
    }

    @inline(__always)
    private func checkThread(_ function: StaticString = #function) {
        precondition(loop.isCurrent, "ChildProcess.\(function) called off its loop's thread")
    }

    /// How the process ended, or nil while it runs. Call on the loop's thread.
    public var exitStatus: ProcessTermination? {
        checkThread()
        return ended
    }

    /// Adds a handler called once, on the loop, when the process has ended and been reaped (rule R15);
    /// for a process that has already ended, in the loop's next iteration.
    ///
    /// Call on the loop's thread.
    public func onExit(_ handler: @escaping (ProcessTermination) -> Void) {
        checkThread()
        if let ended {
            let call = UncheckedSendableBox(handler)
            do {
                try loop.enqueue { call.value(ended) }
            } catch {
                handler(ended)  // the loop refuses work (shutting down): tell the handler now, still once
            }
            return
        }
        exitHandlers.append(handler)
    }

    /// How the process ended, once it has: suspends until then.
    ///
    /// Await on the loop's thread: from a `Task` whose executor preference is ``loop``.
    public var termination: ProcessTermination {
        get async {
            checkThread("termination")
            if let ended { return ended }
            return await withUnsafeContinuation { continuation in
                if let ended {
                    continuation.resume(returning: ended)
                } else {
                    waiters.append(continuation)
                }
            }
        }
    }

    /// Sends `signal` to the process (not to a recycled pid: through its pidfd). Sending to a process that
    /// has ended does nothing.
    ///
    /// - Throws: ``ProcessError/system(_:_:)``.
    ///
    /// Call on the loop's thread. The corresponding system call is `pidfd_send_signal`.
    public func kill(_ signal: Int32 = SIGKILL) throws(ProcessError) {
        checkThread()
        guard ended == nil else { return }
        let code = Spawn.send(signal, to: pidfd)
        guard code == 0 || code == ESRCH else { throw .system("pidfd_send_signal", code) }
    }

    /// Sends `SIGTERM`, then `SIGKILL` if the process still runs after `gracePeriod`.
    ///
    /// Call on the loop's thread. The corresponding system call is `pidfd_send_signal`.
    public func terminate(gracePeriod: Duration = .seconds(5)) {
        checkThread()
        guard ended == nil else { return }
        _ = Spawn.send(SIGTERM, to: pidfd)
        killTimer?.cancel()
        do {
            killTimer = try loop.schedule(after: gracePeriod) { [weak self] in
                guard let self, self.ended == nil else { return }
                _ = Spawn.send(SIGKILL, to: self.pidfd)
            }
        } catch {
            _ = Spawn.send(SIGKILL, to: pidfd)  // the loop is shutting down: no grace period to wait for
        }
    }

    /// The pidfd is readable: the process has ended. Reaps it and tells everyone, once.
    private func pidfdIsReadable() {
        guard ended == nil, let termination = Spawn.reap(pidfd) else { return }
        finish(termination)
    }

    private func finish(_ termination: ProcessTermination) {
        guard ended == nil else { return }
        ended = termination
        loop.removeShutdownObserver(ObjectIdentifier(self))
        exitWatch?.cancel()
        exitWatch = nil
        killTimer?.cancel()
        killTimer = nil
        timeoutTimer?.cancel()
        timeoutTimer = nil
        Spawn.close(pidfd)
        pidfd = -1
        let handlers = exitHandlers
        exitHandlers = []
        for handler in handlers { handler(termination) }
        let suspended = waiters
        waiters = []
        for waiter in suspended { waiter.resume(returning: termination) }
        let retained = keepAlive
        keepAlive = nil
        retained?.release()
    }

    /// The loop shuts down: the child is killed and reaped (it dies at once: the wait is short).
    private func loopIsShuttingDown() {
        guard ended == nil else { return }
        _ = Spawn.send(SIGKILL, to: pidfd)
        finish(Spawn.waitUntilEnded(pidfd))
    }
}
