import LoopKit

/// When a connection last read, wrote and did anything, measured on its loop's clock. Kept only when a
/// timeout is set (``ConnectionOptions``).
///
/// Who looks at it: a connection its listener accepted is kept in the listener's ``ConnectionRegistry``,
/// whose one deadline sweep checks it at each tick (no timer per connection); a connection with no
/// registry (opened with `connect`, an in-memory pair) has one timer of its own, set for its next deadline.
struct TimeoutState {
    /// The timer of a connection no registry sweeps; nil on a swept one.
    var timer: ScheduledTimer?
    /// The last bytes read, or when reading (re)started.
    var lastRead: UInt64
    /// The last bytes sent, or when output started waiting for the socket.
    var lastWrite: UInt64
    /// The last bytes moved either way.
    var lastActivity: UInt64

    init(now: UInt64) {
        lastRead = now
        lastWrite = now
        lastActivity = now
    }

    mutating func read(at now: UInt64) {
        lastRead = now
        lastActivity = now
    }

    mutating func wrote(at now: UInt64) {
        lastWrite = now
        lastActivity = now
    }

    mutating func outputStarted(at now: UInt64) { lastWrite = now }

    mutating func readingResumed(at now: UInt64) { lastRead = now }
}

extension ConnectionOptions {
    /// The shortest of the read, write and idle timeouts; nil when none is set.
    var shortestTimeout: Duration? {
        [readTimeout, writeTimeout, idleTimeout].compactMap { $0 }.min()
    }

    /// How often a registry's sweep must look at connections with these options so that a timeout ends
    /// one at most this late: a quarter of the shortest timeout, between 5 ms and 1 s (as an HTTP
    /// server's sweep). Nil when no timeout is set.
    var sweepInterval: Duration? {
        shortestTimeout.map { max(.milliseconds(5), min(.seconds(1), $0 / 4)) }
    }
}

extension Connection {
    /// Starts keeping the timeouts when any is set: with a timer for the next deadline unless a registry
    /// keeps the connection (its sweep checks them). Loop thread only.
    func startTimeouts() {
        guard let shortest = profile.shortestTimeout else { return }
        timeouts = TimeoutState(now: loop.clockNanoseconds)
        if registry == nil { armTimeoutCheck(after: shortest) }
    }

    /// The connection joined `registry`: the registry's sweep checks its timeouts from now on, and its
    /// timer, if it had one, goes. Loop thread only.
    func timeoutsAreSwept() {
        timeouts?.timer?.cancel()
        timeouts?.timer = nil
    }

    /// The registry's sweep looks at the connection at `now` on the loop's clock: the timeouts of
    /// ``ConnectionOptions`` first, then its handler's deadlines
    /// (``ConnectionHandler/checkDeadlines(_:now:)``) if it is still open. A handler cannot skip the
    /// connection's own timeouts. Loop thread only.
    func sweep(now: UInt64) {
        if timeouts != nil {
            guard !machine.isClosed else { return }
            if case .expired(let which) = timeoutCheck(now: now) {
                end(.timedOut(which))
                return
            }
        }
        handler?.checkDeadlines(self, now: EventLoopClock.Instant(nanoseconds: now))
    }

    /// What a look at the timeouts at `now` finds.
    private enum TimeoutCheck {
        /// This timeout has passed.
        case expired(CloseReason.Timeout)
        /// None has; the next deadline is this far away (nil when none applies now).
        case pending(nanosecondsLeft: UInt64?)
    }

    /// Which timeout has passed at `now`, if any: the read timeout while reading (not while backpressure
    /// pauses it), the write timeout while output waits, the idle timeout always.
    private func timeoutCheck(now: UInt64) -> TimeoutCheck {
        guard let state = timeouts else { return .pending(nanosecondsLeft: nil) }
        var next: UInt64?
        func passed(_ limit: Duration?, since: UInt64, applies: Bool) -> Bool {
            guard let limit, applies else { return false }
            let deadline = since &+ UInt64(max(0, limit / .nanoseconds(1)))
            if now >= deadline { return true }
            next = min(next ?? .max, deadline - now)
            return false
        }
        if passed(profile.options.readTimeout, since: state.lastRead, applies: isReadWatchActive || (!watchesDescriptor && wantsToRead)) {
            return .expired(.read)
        }
        if passed(profile.options.writeTimeout, since: state.lastWrite, applies: !output.isEmpty) { return .expired(.write) }
        if passed(profile.options.idleTimeout, since: state.lastActivity, applies: true) { return .expired(.idle) }
        return .pending(nanosecondsLeft: next)
    }

    private func armTimeoutCheck(after delay: Duration) {
        do {
            timeouts?.timer = try loop.schedule(after: delay) { [weak self] in self?.checkTimeouts() }
        } catch {
            // The loop is shutting down: its shutdown ends this connection.
        }
    }

    /// The timer of a connection no registry sweeps fired: end the connection if a timeout passed, else
    /// check again at the next deadline.
    private func checkTimeouts() {
        guard timeouts != nil, !machine.isClosed, let shortest = profile.shortestTimeout else { return }
        switch timeoutCheck(now: loop.clockNanoseconds) {
        case .expired(let which):
            end(.timedOut(which))
        case .pending(let left?):
            armTimeoutCheck(after: .nanoseconds(Int64(min(left, UInt64(Int64.max)))))
        case .pending(nil):
            armTimeoutCheck(after: shortest)
        }
    }
}
