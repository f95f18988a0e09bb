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
/// Standard input, output and error are each ``StandardIO/pipe`` (a ``Connection`` over a pipe, with its
/// backpressure: a child that floods its output is stopped by the read high-water mark), ``StandardIO/inherit``
/// or ``StandardIO/null``. Close ``standardInput`` to give the child end of file. ``ChildProcess/run(_:arguments:environment:workingDirectory:newProcessGroup:input:outputLimit:timeout:on:)``
/// collects the output of a command.
///
/// The exit is told exactly once, on the loop, in phase 2 of the iteration whose poll found the pidfd
/// readable (rule R15): ``onExit(_:)`` handlers, then tasks awaiting ``termination`` go on in that
/// iteration's drain. The loop's shutdown kills a child still running (`SIGKILL`; its whole process group
/// when it leads one) and reaps it.
///
/// **What the child started.** A child that leads a process group of its own (`newProcessGroup: true`, the
/// default of ``run(_:arguments:environment:workingDirectory:newProcessGroup:input:outputLimit:timeout:on:)``)
/// is terminated with its group: ``terminate(gracePeriod:)`` and the timeout send `SIGTERM` to every process
/// of the group and, after the grace period, `SIGKILL` to those still there, the child's own descendants
/// included even when the child itself has ended. A child in this process's group is signalled alone. Either
/// way, once a terminated child has ended, its output pipes stay open for ``pipeDrain`` and are then closed, so
/// a descendant that keeps them open (a shell's background job) cannot hold a reader for ever.
///
/// **Thread rule**: confined to its loop. Call every method and property on the loop's thread (checked with
/// a precondition), except ``loop`` and ``pid``, which are safe from any thread. The corresponding libuv call
/// is `uv_spawn`.
public final class ChildProcess: @unchecked Sendable {  // loop-confined: every entry point checks the thread
    /// What a child's standard input, output or error is.
    public enum StandardIO: Sendable, Hashable {
        /// A pipe to this process, as a ``Connection`` on the loop.
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
    /// Whether the child leads a process group of its own (its pid is the group's id): then
    /// ``terminate(gracePeriod:)``, the timeout and the loop's shutdown signal the whole group. Safe from any
    /// thread.
    public let leadsProcessGroup: Bool
    /// How long a terminated child's output pipes stay open after it ended, and how long
    /// ``run(_:arguments:environment:workingDirectory:newProcessGroup:input:outputLimit:timeout:on:)`` waits for
    /// its pipes to end after any exit: what the child wrote before it ended is read in that time.
    public static let pipeDrain: Duration = .milliseconds(250)
    /// The write end of the child's standard input, when it is ``StandardIO/pipe``; close it for end of
    /// file. Call on the loop's thread.
    public let standardInput: Connection?
    /// The read end of the child's standard output, when it is ``StandardIO/pipe``. Call on the loop's thread.
    public let standardOutput: Connection?
    /// The read end of the child's standard error, when it is ``StandardIO/pipe``. Call on the loop's thread.
    public let standardError: Connection?

    private var pidfd: Int32
    private var exitWatch: Watch?
    private var ended: ProcessTermination?
    private var exitHandlers: [(ProcessTermination) -> Void] = []
    private var waiters: [UnsafeContinuation<ProcessTermination, Never>] = []
    private var killTimer: ScheduledTimer?
    private var timeoutTimer: ScheduledTimer?
    private var drainTimer: ScheduledTimer?
    /// ``terminate(gracePeriod:)`` or the timeout asked the child to end.
    private var isTerminating = false
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
    ///     signals to this process's group do not reach it, and ``terminate(gracePeriod:)``, the timeout and the
    ///     loop's shutdown reach everything it started in that group.
    ///   - standardInput: A pipe (default), inherited or `/dev/null`.
    ///   - standardOutput: A pipe (default), inherited or `/dev/null`.
    ///   - standardError: A pipe (default), inherited or `/dev/null`.
    ///   - timeout: Terminate the child (``terminate(gracePeriod:)`` with a 1 s grace: its group too when it
    ///     leads one) if it still runs then.
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
        func connection(_ fd: Int32?) -> Connection? {
            guard let fd else { return nil }
            let connection = Connection(loop: loop, fd: fd, profile: profile, connected: true)
            connection.start()
            return connection
        }
        let process = ChildProcess(loop: loop, pid: pid, pidfd: pidfd, leadsProcessGroup: newProcessGroup,
                                   standardInput: connection(parentEnds[0]),
                                   standardOutput: connection(parentEnds[1]), standardError: connection(parentEnds[2]))
        guard pidfd >= 0 else {
            process.forceEnd(-pidfd)
            throw .system("pidfd_open", -pidfd)
        }
        try process.start(timeout: timeout)
        return process
    }

    private init(loop: EventLoop, pid: Int32, pidfd: Int32, leadsProcessGroup: Bool, standardInput: Connection?,
                 standardOutput: Connection?, standardError: Connection?) {
        self.loop = loop
        self.pid = pid
        self.leadsProcessGroup = leadsProcessGroup
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
        // Leading: killed before its pipes see the shutdown, or a child reading its input (`cat`) would see
        // the end of it and exit on its own first, and the shutdown's SIGKILL be a race.
        let leading = loop.addShutdownObserver(ObjectIdentifier(self), leading: true) { [weak self] in
            self?.loopIsShuttingDown()
        }
        guard leading else {
            signalAll(SIGKILL)
            loopIsShuttingDown()
            throw .loopShutDown
        }
        do {
            exitWatch = try loop.watch(pidfd, for: .readable) { [unowned self] _ in self.pidfdIsReadable() }
        } catch {
            signalAll(SIGKILL)
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

    /// Sends `signal` to the process through its pidfd and, with `toProcessGroup`, first to every process of
    /// the group it leads (`kill(-pid, signal)`, as swift-subprocess's `send(signal:toProcessGroup:)`).
    /// Sending to a process that has ended does nothing, even to a group that still has members
    /// (``terminate(gracePeriod:)`` reaches those).
    ///
    /// - Throws: ``ProcessError/invalidArgument(_:)`` for `toProcessGroup` on a child that leads no group
    ///   (the signal would reach this process's own group); ``ProcessError/system(_:_:)``.
    ///
    /// Call on the loop's thread. The corresponding system calls are `pidfd_send_signal` and `kill(-pid)`.
    public func kill(_ signal: Int32, toProcessGroup: Bool) throws(ProcessError) {
        checkThread()
        guard !toProcessGroup || leadsProcessGroup else {
            throw .invalidArgument("process \(pid) leads no process group of its own: spawn it with newProcessGroup: true")
        }
        guard ended == nil else { return }
        if toProcessGroup {
            let code = Spawn.send(signal, toGroup: pid)
            guard code == 0 || code == ESRCH else { throw .system("kill", code) }
        }
        try kill(signal)
    }

    /// Sends `SIGTERM`, then `SIGKILL` if the process still runs after `gracePeriod`. A child that leads a
    /// process group is terminated with its group: `SIGTERM` to every member, and after the grace period
    /// `SIGKILL` to every member still there, even once the child itself has ended. After a terminated child
    /// has ended, its output pipes are closed within ``pipeDrain``.
    ///
    /// Call on the loop's thread. The corresponding system calls are `pidfd_send_signal` and `kill(-pid)`.
    public func terminate(gracePeriod: Duration = .seconds(5)) {
        checkThread()
        guard ended == nil else { return }
        isTerminating = true
        signalAll(SIGTERM)
        killTimer?.cancel()
        let (pid, leadsProcessGroup) = (pid, leadsProcessGroup)
        do {
            killTimer = try loop.schedule(after: gracePeriod) { [weak self] in
                if let self, self.ended == nil {
                    self.signalAll(SIGKILL)
                } else if leadsProcessGroup {
                    _ = Spawn.send(SIGKILL, toGroup: pid)  // the child ended; what it started in its group did not
                }
            }
        } catch {
            signalAll(SIGKILL)  // the loop is shutting down: no grace period to wait for
        }
    }

    /// Signals the process through its pidfd and, when it leads one, its group.
    private func signalAll(_ signal: Int32) {
        if leadsProcessGroup { _ = Spawn.send(signal, toGroup: pid) }
        _ = Spawn.send(signal, to: pidfd)
    }

    /// Closes the output pipes that are still open after `delay`: for a child that has ended, whose
    /// descendants may hold them open.
    func closeOutputPipes(after delay: Duration) {
        guard drainTimer == nil else { return }
        let pipes = [standardOutput, standardError].compactMap { $0 }.filter { !$0.isClosed }
        guard !pipes.isEmpty else { return }
        do {
            drainTimer = try loop.schedule(after: delay) {
                for pipe in pipes { pipe.close() }
            }
        } catch {
            for pipe in pipes { pipe.close() }  // the loop is shutting down
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
        if !(isTerminating && leadsProcessGroup && Spawn.groupHasMembers(pid)) {
            killTimer?.cancel()  // else it still kills, after the grace period, what the child left in its group
        }
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
        if isTerminating { closeOutputPipes(after: Self.pipeDrain) }
        let retained = keepAlive
        keepAlive = nil
        retained?.release()
    }

    /// The loop shuts down: the child is killed and reaped (it dies at once: the wait is short).
    private func loopIsShuttingDown() {
        guard ended == nil else { return }
        signalAll(SIGKILL)
        finish(Spawn.waitUntilEnded(pidfd))
    }
}
