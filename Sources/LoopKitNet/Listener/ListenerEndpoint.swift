import LoopKit
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// One listening socket on one loop; the connections it accepted are kept in its ``ConnectionRegistry``.
///
/// Loop-confined: every mutable property is touched only on `loop`'s thread (methods called from other
/// threads hop there first); the unchecked conformance stands for that rule.
final class ListenerEndpoint: @unchecked Sendable {  // loop-confined: used on its loop's thread only; other threads read its registry's atomic count
    let loop: EventLoop
    /// What every connection this endpoint accepts shares.
    let profile: ConnectionProfile
    let acceptor: TCPListener.Acceptor
    let unixPath: String?
    /// The accepted connections (shared with the protocol served on them, when it brought one).
    let registry: ConnectionRegistry

    private var fd: Int32
    private var watch: Watch?
    private var isClosed = false
    private var isPaused = false
    private var retryTimer: ScheduledTimer?
    /// The sweep interval this endpoint asked its registry for, until it closes (its accepted connections
    /// keep asking for it while they live).
    private var askedSweepInterval: Duration?

    /// The security layer (TLS) over the accepted connections, if they speak it.
    let security: (any TransportSecurity)?
    /// Where failed handshakes are counted (shared with the listener's other endpoints).
    let failedHandshakes: FailedHandshakes

    init(loop: EventLoop, fd: Int32, options: ConnectionOptions, security: (any TransportSecurity)?, acceptor: TCPListener.Acceptor,
         unixPath: String?, failedHandshakes: FailedHandshakes, registry: ConnectionRegistry?) {
        self.security = security
        self.failedHandshakes = failedHandshakes
        self.loop = loop
        self.fd = fd
        profile = ConnectionProfile(options: options, isTCP: unixPath == nil, accepted: true)
        self.acceptor = acceptor
        self.unixPath = unixPath
        self.registry = registry ?? ConnectionRegistry(loop: loop)
    }

    /// Watches the listening socket on the loop's thread, waiting for that when called elsewhere.
    func register() throws(NetError) {
        if loop.isCurrent {
            try registerOnLoop()
            return
        }
        let result: Result<Void, NetError>
        do {
            result = try loop.invokeAndWait { [self] in
                do throws(NetError) { try registerOnLoop(); return .success(()) } catch { return .failure(error) }
            }
        } catch {
            throw .loopShutDown
        }
        try result.get()
    }

    private func registerOnLoop() throws(NetError) {
        // The loop's shutdown stops accepting, and the registry's observer ends the connections accepted
        // here (they have no observers of their own: one per registry rather than one per connection).
        guard registry.onLoopShutdown({ [weak self] in self?.closeOnLoop() }) else {
            throw .loopShutDown
        }
        // The accepted connections' timeouts are checked by the registry's sweep.
        if let interval = profile.sweepInterval {
            registry.sweep(every: interval)
            askedSweepInterval = interval
        }
        do {
            watch = try loop.watch(fd, for: .readable) { [unowned self] _ in self.acceptAll() }
        } catch {
            stopAskingForSweep()
            registry.close()
            if case .libevent(let call, let code) = error { throw .system(call, code) }
            throw .loopShutDown
        }
    }

    /// Withdraws this endpoint's sweep interval from the registry (a registry shared with a server that
    /// sweeps more coarsely goes back to its interval once no accepted connection needs this one).
    private func stopAskingForSweep() {
        guard let interval = askedSweepInterval else { return }
        askedSweepInterval = nil
        registry.stopSweeping(every: interval)
    }

    /// Runs `body` on the loop's thread: now when on it, else in its next iteration. A loop that refuses
    /// the work is shutting down, and its shutdown closes the endpoint (its observer): nothing is left
    /// for `body` to pause, resume or close.
    func onLoop(_ body: @escaping @Sendable (ListenerEndpoint) -> Void) {
        if loop.isCurrent {
            body(self)
            return
        }
        do {
            try loop.enqueue { [self] in body(self) }
        } catch {
            // Refused: the shutdown observer closes (or has closed) the endpoint on the loop's thread.
        }
    }

    func pause() {
        isPaused = true
        watch?.pause()
    }

    func resume() {
        isPaused = false
        if retryTimer == nil { resumeWatch() }
    }

    private func resumeWatch() {
        guard !isClosed, let watch else { return }
        do {
            try watch.resume()
        } catch {
            closeOnLoop()  // the socket can no longer be watched: stop accepting rather than pretend
        }
    }

    func closeFromAnyThread() {
        if watch == nil, fd >= 0 {  // never registered (bind failed on a later loop)
            Socket.close(fd)
            fd = -1
            if let unixPath { Socket.unlink(path: unixPath) }
            return
        }
        onLoop { $0.closeOnLoop() }
    }

    func closeOnLoop() {
        guard !isClosed else { return }
        isClosed = true
        // The registry's observer stays while accepted connections live on: the loop's shutdown ends them.
        registry.close()
        stopAskingForSweep()
        retryTimer?.cancel()
        retryTimer = nil
        watch?.cancel()
        watch = nil
        if fd >= 0 {
            Socket.close(fd)
            fd = -1
        }
        if let unixPath { Socket.unlink(path: unixPath) }
    }

    /// Closes every connection gracefully; returns when all have ended (aborting any left at `deadline`).
    /// On a loop that is shutting down it returns at once: the loop's shutdown ends the connections.
    func closeConnections(deadline: Duration) async {
        // On the loop's own executor, so the continuation is created and resumed on the loop thread: no
        // cross-thread resume racing the continuation's set-up (which TSan cannot see into). On a loop
        // that has finished shutting down the task runs on the global executor and returns at once.
        await withTaskExecutorPreference(loop) {
            await withUnsafeContinuation { (continuation: UnsafeContinuation<Void, Never>) in
                if loop.isCurrent {
                    drainOnLoop(deadline: deadline, continuation: continuation)
                    return
                }
                do {
                    try loop.enqueue { [self] in drainOnLoop(deadline: deadline, continuation: continuation) }
                } catch {
                    continuation.resume()
                }
            }
        }
    }

    private func drainOnLoop(deadline: Duration, continuation: UnsafeContinuation<Void, Never>) {
        closeOnLoop()
        registry.drain(deadline: deadline) { continuation.resume() }
    }

    // MARK: Accepting (loop thread)

    /// The listening socket is readable: accept what waits, up to 64 connections per iteration so one
    /// busy listener does not starve the loop's other work.
    private func acceptAll() {
        for _ in 0..<64 where !isClosed {
            switch Socket.accept(fd) {
            case .connection(let client):
                accepted(fd: client)
            case .none:
                return
            case .exhausted(let code):
                backOff(code)
                return
            }
        }
    }

    /// A connection was accepted.
    private func accepted(fd: Int32) {
        guard loop.isAcceptingWork else {  // accepted in the loop's last iteration: nothing may start now
            Socket.close(fd)
            return
        }
        let transport: Transport
        do throws(NetError) {
            transport = try SocketTransport(fd: fd).secured(by: security, serverName: nil, on: loop)
        } catch {
            failedHandshakes.record(error)  // the layer made no session; the socket transport closed the descriptor
            return
        }
        let connection = Connection(loop: loop, transport: transport, profile: profile, connected: true, observesShutdown: false)
        // Registered before it starts: its timeouts, if any, are the registry's sweep's (no timer made),
        // and a start that fails ends a registered connection, which leaves the registry at once.
        registry.add(connection)
        connection.start()
        guard security != nil else {
            hand(connection)
            return
        }
        // A secured (TLS) connection reaches the handler once its handshake is done; a failed one never does, and
        // is counted instead. A loop shutting down is not the peer's failure.
        connection.startHandshake { [weak self, unowned connection] error in
            guard let self else { return }
            switch error {
            case nil: hand(connection)
            case .loopShutDown?, .connectionClosed(.shutDown)?, .connectionClosed(.closedLocally)?, .connectionClosed(.aborted)?: break
            case let error?: failedHandshakes.record(error)
            }
        }
    }

    /// Gives an accepted (and, with TLS, handshaken) connection to the listener's handler.
    private func hand(_ connection: Connection) {
        switch acceptor {
        case .callback(let onAccept):
            do {
                try onAccept(connection)
            } catch {
                connection.close()
                return
            }
            // The first read, now: a client usually sends right behind its handshake, so its bytes are
            // often here already, and reading them now saves a poll (one per request on
            // `Connection: close` traffic). Nothing there: the read returns EAGAIN and the watch goes on.
            if connection.handlerReads, !connection.machine.isClosed { connection.transportIsReadable() }
        case .task(let handler):
            registry.taskStarted()
            Task(executorPreference: loop) { [registry] in
                do { try await handler(connection) } catch {}
                connection.close()
                registry.taskEnded()  // on the loop: the task's executor
            }
        }
    }

    /// `accept` failed for want of descriptors or memory: stop accepting for 100 ms rather than spin on
    /// a socket that stays readable (the waiting connections stay in the kernel's backlog).
    private func backOff(_ code: Int32) {
        guard retryTimer == nil, !isClosed else { return }
        watch?.pause()
        do {
            retryTimer = try loop.schedule(after: .milliseconds(100)) { [weak self] in
                guard let self else { return }
                retryTimer = nil
                if !isPaused { resumeWatch() }
            }
        } catch {
            closeOnLoop()  // the loop is shutting down: nothing more to accept
        }
    }

    deinit {
        if fd >= 0 { Socket.close(fd) }
    }
}
