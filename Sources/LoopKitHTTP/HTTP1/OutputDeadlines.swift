import LoopKitNet

/// The two deadlines on what a client must take, which hold in every state of every protocol: output
/// that makes no progress for ``HTTPServer/Configuration/writeTimeout`` and a close that cannot drain
/// within ``HTTPServer/Configuration/closeTimeout`` end the connection with a reset.
///
/// Both count from stamps the connection keeps on the loop's clock, taken only on the slow path: when its
/// output last moved while some waited (``Connection/outputStalledSince(now:)``), and when its
/// graceful close began waiting for the output (``Connection/closingSince``). Compared with the
/// sweep's reading of the clock, neither is noticed before it passed, nor more than one sweep interval
/// after.
enum OutputDeadlines {
    /// Looks at `tcp` at the sweep that read `now` on the loop's clock: resets it and returns true when
    /// its output made no progress for the write timeout, or its close did not drain within the close
    /// timeout.
    static func cutIfStuck(_ tcp: Connection, now: UInt64, context: HTTPLoopContext) -> Bool {
        if let since = tcp.outputStalledSince(now: now), now >= since.addingSaturated(context.writeTimeout) {
            cut(tcp, .writeProgress, context: context)
            return true
        }
        if let since = tcp.closingSince, now >= since.addingSaturated(context.closeTimeout) {
            cut(tcp, .closeDrain, context: context)
            return true
        }
        return false
    }

    /// Resets the connection for `deadline`: logged at `debug`, counted through the configuration's hook.
    private static func cut(_ tcp: Connection, _ deadline: HTTPServer.Configuration.Deadline, context: HTTPLoopContext) {
        context.logger.debug("connection reset: the client took no output in time",
                             metadata: ["deadline": "\(deadline.rawValue)", "pending": "\(tcp.bufferedOutputCount)"])
        context.configuration.connectionCut?(deadline)
        tcp.abort()
    }
}
