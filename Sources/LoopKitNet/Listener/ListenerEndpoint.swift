import LoopKit
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// One listening socket on one loop, and the connections it accepted.
///
/// Loop-confined: every mutable property is touched only on `loop`'s thread (methods called from other
/// threads hop there first); the unchecked conformance stands for that rule. `openConnections` is atomic
/// so that other threads can read the count.
final class ListenerEndpoint: @unchecked Sendable {
    let loop: EventLoop
    let options: ConnectionOptions
    let acceptor: TCPListener.Acceptor
    let unixPath: String?
    let openConnections = Atomic<Int>(0)

    private var fd: Int32
    private var listener: LibEventListener?
    private var isClosed = false
    private var isPaused = false
    private var connections: [ObjectIdentifier: TCPConnection] = [:]
    private var drainWaiters: [UnsafeContinuation<Void, Never>] = []
    /// Handler tasks that have not returned yet: shutdown waits for them too, so no task is left to be
    /// scheduled on a loop that shuts down after it.
    private var runningHandlers = 0
    private var retryTimer: LibEventTimer?

    init(loop: EventLoop, fd: Int32, options: ConnectionOptions, acceptor: TCPListener.Acceptor, unixPath: String?) {
        self.loop = loop
        self.fd = fd
        self.options = options
        self.acceptor = acceptor
        self.unixPath = unixPath
    }

    /// Wraps the socket in an evconnlistener on the loop's thread, waiting for it when called elsewhere.
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
        // The loop's shutdown stops accepting (its connections end through their own observers).
        guard loop.addShutdownObserver(ObjectIdentifier(self), { [weak self] in self?.closeOnLoop() }) else {
            throw .loopShutDown
        }
        do throws(NetError) {
            listener = try LibEventListener(base: loop.eventBase, fd: fd, context: Unmanaged.passUnretained(self).toOpaque())
        } catch {
            loop.removeShutdownObserver(ObjectIdentifier(self))
            throw error
        }
        fd = -1  // the listener owns it now
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
        listener?.disable()
    }

    func resume() {
        isPaused = false
        if retryTimer == nil { listener?.enable() }
    }

    func closeFromAnyThread() {
        if listener == nil, fd >= 0 {  // never registered (bind failed on a later loop)
            Glibc.close(fd)
            fd = -1
            if let unixPath { NetSocket.unlink(path: unixPath) }
            return
        }
        onLoop { $0.closeOnLoop() }
    }

    func closeOnLoop() {
        guard !isClosed else { return }
        isClosed = true
        loop.removeShutdownObserver(ObjectIdentifier(self))
        retryTimer?.free()
        retryTimer = nil
        listener?.free()
        listener = nil
        if let unixPath { NetSocket.unlink(path: unixPath) }
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
                    closeConnectionsOnLoop(deadline: deadline, continuation: continuation)
                    return
                }
                do {
                    try loop.enqueue { [self] in closeConnectionsOnLoop(deadline: deadline, continuation: continuation) }
                } catch {
                    continuation.resume()
                }
            }
        }
    }

    private func closeConnectionsOnLoop(deadline: Duration, continuation: UnsafeContinuation<Void, Never>) {
        closeOnLoop()
        if connections.isEmpty, runningHandlers == 0 {
            continuation.resume()
            return
        }
        drainWaiters.append(continuation)
        for connection in Array(connections.values) { connection.close() }
        guard !connections.isEmpty else { return }
        do {
            _ = try loop.schedule(after: deadline) { [self] in abortConnections() }
        } catch {
            abortConnections()  // the loop is shutting down: no deadline to wait for
        }
    }

    /// Aborts every connection still open (the graceful close's deadline passed). Loop thread.
    private func abortConnections() {
        for connection in Array(connections.values) { connection.abort() }
    }

    // MARK: libevent callbacks (loop thread)

    /// A connection was accepted.
    func accepted(fd: Int32, address: SocketAddress?) {
        guard loop.isAcceptingWork else {  // accepted in the loop's last iteration: nothing may start now
            Glibc.close(fd)
            return
        }
        let buffers: LibEventBuffers
        do throws(NetError) {
            buffers = try LibEventBuffers.socket(base: loop.eventBase, fd: fd)
        } catch {
            return  // out of memory: the socket was closed, the peer sees a reset
        }
        let connection = TCPConnection(loop: loop, buffers: buffers, isSocket: true, connected: false, options: options)
        connection.remoteAddress = address
        _ = connection.machine.connected()
        connection.start()
        let key = ObjectIdentifier(connection)
        connections[key] = connection
        openConnections.add(1, ordering: .relaxed)
        // Weak: a connection may outlive its listener (released while connections are open).
        connection.closeHandlers.append { [weak self] _ in
            guard let self else { return }
            connections[key] = nil
            openConnections.subtract(1, ordering: .relaxed)
            resumeDrainWaitersIfDone()
        }
        switch acceptor {
        case .callback(let onAccept):
            do { try onAccept(connection) } catch { connection.close() }
        case .task(let handler):
            runningHandlers += 1
            Task(executorPreference: loop) { [self] in
                do { try await handler(connection) } catch {}
                connection.close()
                runningHandlers -= 1  // on the loop: the task's executor
                resumeDrainWaitersIfDone()
            }
        }
    }

    private func resumeDrainWaitersIfDone() {
        guard connections.isEmpty, runningHandlers == 0, !drainWaiters.isEmpty else { return }
        let waiters = drainWaiters
        drainWaiters = []
        for waiter in waiters { waiter.resume() }
    }

    /// `accept` failed (out of file descriptors, most likely): stop accepting for 100 ms rather than spin.
    func acceptFailed(errno code: Int32) {
        guard code == EMFILE || code == ENFILE || code == ENOBUFS || code == ENOMEM, listener != nil else { return }
        listener?.disable()
        let timer = retryTimer ?? LibEventTimer(base: loop.eventBase) { [unowned self] in
            retryTimer?.free()
            retryTimer = nil
            if !isPaused, !isClosed { listener?.enable() }
        }
        retryTimer = timer
        timer.arm(after: .milliseconds(100))
    }

    deinit {
        // The listener handle references this endpoint unretained: it must be gone first.
        listener?.free()
        if fd >= 0 { Glibc.close(fd) }
    }
}
