import LoopKit
import Synchronization

/// The connections a server keeps on one loop, and their one graceful drain: a listener endpoint keeps
/// the connections it accepts here, and a protocol served on them (LoopKitHTTP) shares the endpoint's
/// registry instead of keeping one of its own. A connection is registered once and leaves on its own
/// when it ends.
///
/// The drain asks what is served on each connection to close (``ConnectionHandler/connectionShouldDrain(_:)``:
/// at once when idle, else once the work under way allows), aborts what is left at the deadline, and
/// resumes each of its waiters exactly once: when the last connection has ended, or when the loop shuts
/// down (its shutdown ends every registered connection).
///
/// One deadline sweep: once an interval was asked for, a timer ticks while connections are registered
/// (it stops at the first tick that finds none) and looks at each connection: its own timeouts
/// (``ConnectionOptions/readTimeout``, ``ConnectionOptions/writeTimeout``,
/// ``ConnectionOptions/idleTimeout``) first, then its handler's deadlines
/// (``ConnectionHandler/checkDeadlines(_:now:)``), so a registered connection keeps no timer of its own.
/// It ticks at the finest interval any party asks for (an owner through ``sweep(every:)``, a registered
/// connection through its own timeouts), so each party's deadlines are noticed within its own interval;
/// every deadline is kept on the loop's clock (``sweptAt``), so a change of interval makes none early.
///
/// Loop-confined: created and used on its loop's thread; other threads read ``count`` only.
package final class ConnectionRegistry: @unchecked Sendable {  // loop-confined: used on its loop's thread only; other threads read its atomic count
    package let loop: EventLoop
    private var connections: [ObjectIdentifier: Connection] = [:]
    private let openConnections = Atomic<Int>(0)
    /// Called with +1 and -1 as connections are registered and end (a gauge's hook). Loop thread.
    package var countChanged: (@Sendable (_ delta: Int) -> Void)?
    /// Tasks serving connections that have not returned yet: a drain waits for them too, so no task is
    /// left to be scheduled on a loop that shuts down after it.
    private var runningTasks = 0
    private var drainWaiters: [() -> Void] = []
    private var abortTimer: ScheduledTimer?
    /// What the owners do when the loop shuts down, before the connections end (stop accepting, stop a timer).
    private var shutdownHandlers: [() -> Void] = []
    private var isObservingShutdown = false
    /// Set by ``drain(deadline:whenDrained:)`` and by the loop's shutdown.
    package private(set) var isDraining = false
    /// No connection will be registered any more (the endpoint stopped accepting, or a drain began).
    private var isClosed = false
    /// The sweep intervals asked for, each with how many ask for it: owners through ``sweep(every:)``
    /// (until ``stopSweeping(every:)``) and registered connections with timeouts of their own (until they
    /// end). The sweep ticks at the finest.
    private var askedIntervals: [Duration: Int] = [:]
    /// The finest interval asked for, and the sweep's timer while it ticks.
    private var sweepInterval: Duration?
    private var sweepTimer: ScheduledTimer?
    /// Sweep ticks so far (their interval can change: deadlines are kept on the loop's clock, not in
    /// ticks). Loop thread.
    package private(set) var tick: UInt64 = 0
    /// The loop's clock (``EventLoop/clockNanoseconds``) read at the last tick, once for all the
    /// connections: what deadlines kept in nanoseconds compare against during a sweep. Loop thread.
    package private(set) var sweptAt: UInt64 = 0

    /// A registry for connections on `loop`. Any thread.
    package init(loop: EventLoop) {
        self.loop = loop
    }

    /// The registered connections; safe from any thread.
    package var count: Int { openConnections.load(ordering: .relaxed) }

    /// Watches the loop's shutdown (which ends every connection registered here), first running
    /// `handler`. Each owner adds its handler; the one observer stays until the registry is closed and
    /// empty. Returns false when the loop is shutting down. Loop thread.
    package func onLoopShutdown(_ handler: @escaping () -> Void = {}) -> Bool {
        if !isObservingShutdown {
            guard loop.addShutdownObserver(ObjectIdentifier(self), { [self] in loopIsShuttingDown() }) else { return false }
            isObservingShutdown = true
        }
        shutdownHandlers.append(handler)
        return true
    }

    /// Registers `connection`: the registry keeps it until it ends. Loop thread.
    package func add(_ connection: Connection) {
        connection.registry = self
        connections[ObjectIdentifier(connection)] = connection
        openConnections.add(1, ordering: .relaxed)
        countChanged?(1)
        if let interval = connection.profile.sweepInterval {  // its timeouts are swept from now on
            connection.timeoutsAreSwept()
            ask(interval, 1)
        }
        if sweepTimer == nil, sweepInterval != nil { startTicking() }
    }

    /// Sweeps the connections at least every `interval` while one is registered, until
    /// ``stopSweeping(every:)`` withdraws it. The sweep ticks at the finest interval asked for: a finer one
    /// re-arms it at once. Loop thread.
    package func sweep(every interval: Duration) {
        ask(interval, 1)
        if !connections.isEmpty, sweepTimer == nil { startTicking() }
    }

    /// Withdraws one ``sweep(every:)`` of `interval` (its owner left): when it was the finest asked for,
    /// the sweep ticks at the next finest. Loop thread.
    package func stopSweeping(every interval: Duration) {
        ask(interval, -1)
    }

    /// The interval the sweep ticks at: the finest asked for, nil when none is. Loop thread.
    package var interval: Duration? { sweepInterval }

    /// Counts `change` more parties asking for `interval`; re-arms a ticking sweep when the finest changed.
    private func ask(_ interval: Duration, _ change: Int) {
        let askers = askedIntervals[interval, default: 0] + change
        askedIntervals[interval] = askers > 0 ? askers : nil
        if change > 0, let current = sweepInterval, current <= interval { return }  // not finer: nothing changes
        let finest = askedIntervals.keys.min()
        guard finest != sweepInterval else { return }
        sweepInterval = finest
        guard sweepTimer != nil else { return }  // the next connection starts it at the new interval
        stopTicking()
        if !connections.isEmpty { startTicking() }
    }

    private func startTicking() {
        guard let interval = sweepInterval else { return }
        do {
            sweepTimer = try loop.schedule(after: interval, repeating: interval) { [unowned self] in sweepOnce() }
        } catch {
            // The loop is shutting down: its shutdown ends every connection, with no deadline left to check.
        }
    }

    private func sweepOnce() {
        tick &+= 1
        // A tick that finds no connection stops the timer (nothing has a deadline; the next connection
        // starts it again): lazily, so connections that come and go one at a time do not each start one.
        guard !connections.isEmpty else { return stopTicking() }
        sweptAt = loop.clockNanoseconds
        forEach { $0.sweep(now: sweptAt) }
    }

    private func stopTicking() {
        sweepTimer?.cancel()
        sweepTimer = nil
    }

    /// A registered connection ended (called by the connection, after its handler and close observers).
    func connectionEnded(_ connection: Connection) {
        guard connections.removeValue(forKey: ObjectIdentifier(connection)) != nil else { return }
        openConnections.subtract(1, ordering: .relaxed)
        countChanged?(-1)
        if let interval = connection.profile.sweepInterval { ask(interval, -1) }
        finishIfDone()
    }

    /// Calls `body` with every registered connection (a snapshot: `body` may end them). Loop thread.
    package func forEach(_ body: (Connection) -> Void) {
        guard !connections.isEmpty else { return }
        for connection in Array(connections.values) { body(connection) }
    }

    /// A task serving a connection began; ``taskEnded()`` when it returns. Loop thread.
    func taskStarted() { runningTasks += 1 }

    /// A task from ``taskStarted()`` returned. Loop thread.
    func taskEnded() {
        runningTasks -= 1
        finishIfDone()
    }

    /// No connection will be registered any more; the shutdown observer goes once the last one ends.
    /// Loop thread.
    package func close() {
        isClosed = true
        finishIfDone()
    }

    /// The graceful drain: closes the registry, asks what is served on each connection to close
    /// (``ConnectionHandler/connectionShouldDrain(_:)``), aborts what is left after `deadline`, and calls
    /// `whenDrained` once, when no connection (and no serving task) is left or the loop shuts down.
    /// Draining again adds a waiter to the drain under way. Loop thread.
    package func drain(deadline: Duration, whenDrained: @escaping () -> Void) {
        isClosed = true
        drainWaiters.append(whenDrained)
        guard !isDraining else {
            finishIfDone()
            return
        }
        isDraining = true
        forEach { connection in
            if let handler = connection.handler {
                handler.connectionShouldDrain(connection)
            } else {
                connection.close()  // no handler yet (a TLS handshake under way): close as a plain connection
            }
        }
        if !connections.isEmpty {
            do {
                abortTimer = try loop.schedule(after: deadline) { [self] in
                    abortTimer = nil
                    forEach { $0.abort() }
                }
            } catch {
                forEach { $0.abort() }  // the loop is shutting down: no deadline to wait for
            }
        }
        finishIfDone()
    }

    /// The loop shuts down: the owners stop, every connection ends, and every drain waiter is resumed.
    private func loopIsShuttingDown() {
        isObservingShutdown = false  // the loop drops its observers as it runs them
        isClosed = true
        isDraining = true
        let handlers = shutdownHandlers
        shutdownHandlers = []
        for handler in handlers { handler() }
        forEach { $0.end(.shutDown) }
        stopTicking()
        resumeWaiters()
    }

    private func finishIfDone() {
        guard isClosed, connections.isEmpty, runningTasks == 0 else { return }
        abortTimer?.cancel()
        abortTimer = nil
        stopTicking()
        if isObservingShutdown {
            isObservingShutdown = false
            shutdownHandlers = []
            loop.removeShutdownObserver(ObjectIdentifier(self))
        }
        resumeWaiters()
    }

    deinit {
        sweepTimer?.cancel()
    }

    private func resumeWaiters() {
        guard !drainWaiters.isEmpty else { return }
        let waiters = drainWaiters
        drainWaiters = []
        for waiter in waiters { waiter() }
    }
}
