import LoopKitNet

/// The two deadlines on what a client must take, which hold in every state of every protocol: output
/// that makes no progress for ``HTTPServer/Configuration/writeTimeout`` and a close that cannot drain
/// within ``HTTPServer/Configuration/closeTimeout`` end the connection with a reset. The state of one
/// connection's looks, kept between sweeps.
struct OutputDeadlines: Equatable {
    /// The connection's sent-byte count when output was last seen waiting, and the tick since which it
    /// has not moved.
    private var waiting: (bytesSent: UInt64, since: UInt64)?
    /// The tick at which the connection was first seen closing with output left to send.
    private var closingSince: UInt64?

    static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.waiting?.bytesSent == rhs.waiting?.bytesSent && lhs.waiting?.since == rhs.waiting?.since
            && lhs.closingSince == rhs.closingSince
    }

    /// Whether nothing is being watched (a connection need not keep the state then).
    var isIdle: Bool { waiting == nil && closingSince == nil }

    /// Looks at `tcp` at sweep `tick`: resets it and returns true when its output made no progress for
    /// the write timeout, or its close did not drain within the close timeout.
    mutating func cutIfStuck(_ tcp: TCPConnection, now tick: UInt64, context: HTTPLoopContext) -> Bool {
        if outputIsStuck(tcp, now: tick, context: context) {
            cut(tcp, .writeProgress, context: context)
            return true
        }
        if closeIsStuck(tcp, now: tick, context: context) {
            cut(tcp, .closeDrain, context: context)
            return true
        }
        return false
    }

    private mutating func outputIsStuck(_ tcp: TCPConnection, now tick: UInt64, context: HTTPLoopContext) -> Bool {
        guard tcp.bufferedOutputCount > 0 else {
            waiting = nil
            return false
        }
        let sent = tcp.bytesSent
        guard let waiting, waiting.bytesSent == sent else {
            self.waiting = (sent, tick)
            return false
        }
        return tick &- waiting.since >= context.writeTimeoutTicks
    }

    private mutating func closeIsStuck(_ tcp: TCPConnection, now tick: UInt64, context: HTTPLoopContext) -> Bool {
        guard tcp.isClosing else { return false }
        guard let since = closingSince else {
            closingSince = tick
            return false
        }
        return tick &- since >= context.closeTimeoutTicks
    }

    /// Resets the connection for `deadline`: logged at `debug`, counted through the configuration's hook.
    private func cut(_ tcp: TCPConnection, _ deadline: HTTPServer.Configuration.Deadline, context: HTTPLoopContext) {
        context.logger.debug("connection reset: the client took no output in time",
                             metadata: ["deadline": "\(deadline.rawValue)", "pending": "\(tcp.bufferedOutputCount)"])
        context.configuration.connectionCut?(deadline)
        tcp.abort()
    }
}
