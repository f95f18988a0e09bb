import LoopKit

/// When a connection last read, wrote and did anything, measured on its loop's clock, and the one timer
/// that checks its timeouts. Kept only when a timeout is set (``ConnectionOptions``).
struct TimeoutState {
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

extension TCPConnection {
    /// Starts the timeout timer when any timeout is set. Loop thread only.
    func startTimeouts() {
        let limits = [profile.options.readTimeout, profile.options.writeTimeout, profile.options.idleTimeout].compactMap { $0 }
        guard let first = limits.min() else { return }
        timeouts = TimeoutState(now: loop.clockNanoseconds)
        armTimeoutCheck(after: first)
    }

    private func armTimeoutCheck(after delay: Duration) {
        do {
            timeouts?.timer = try loop.schedule(after: delay) { [weak self] in self?.checkTimeouts() }
        } catch {
            // The loop is shutting down: its shutdown ends this connection.
        }
    }

    /// The timer fired: end the connection if a timeout passed, else check again at the next deadline.
    private func checkTimeouts() {
        guard let state = timeouts, !machine.isClosed else { return }
        let now = loop.clockNanoseconds
        var next = UInt64.max
        func check(_ limit: Duration?, since: UInt64, applies: Bool) -> Bool {
            guard let limit, applies else { return false }
            let deadline = since &+ UInt64(max(0, limit / .nanoseconds(1)))
            if now >= deadline { return true }
            next = min(next, deadline - now)
            return false
        }
        if check(profile.options.readTimeout, since: state.lastRead, applies: isReadWatchActive || (isInMemory && wantsToRead)) {
            end(.timedOut(.read))
        } else if check(profile.options.writeTimeout, since: state.lastWrite, applies: !output.isEmpty) {
            end(.timedOut(.write))
        } else if check(profile.options.idleTimeout, since: state.lastActivity, applies: true) {
            end(.timedOut(.idle))
        } else {
            let shortest = [profile.options.readTimeout, profile.options.writeTimeout, profile.options.idleTimeout].compactMap { $0 }.min()!
            armTimeoutCheck(after: next == .max ? shortest : .nanoseconds(Int64(min(next, UInt64(Int64.max)))))
        }
    }
}
