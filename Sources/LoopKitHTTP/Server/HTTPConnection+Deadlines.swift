import LoopKitNet

// Every deadline of an HTTP connection, checked by its loop's sweep (``HTTPLoopContext``): one per state
// for what the client must send (head, body, idle), and two for what it must take (write progress, close
// drain, ``OutputDeadlines``), which hold in every state and, after an upgrade, for the protocol upgraded to
// (``ServedWebSocket``).

extension HTTPConnection {
    /// The registry's sweep (``HTTPLoopContext/registry``).
    func checkDeadlines(_ connection: TCPConnection, now tick: UInt64) {
        checkTimeout(now: tick)
    }

    /// Called by the loop's sweep timer (``HTTPLoopContext``): ends the connection when the client has stopped taking its output,
    /// when a close cannot drain, or when its state has lasted too long.
    func checkTimeout(now tick: UInt64) {
        guard !isClosed else { return }
        var deadlines = outputDeadlines
        let cut = deadlines.cutIfStuck(tcp, now: tick, context: context)
        outputDeadlines = deadlines
        if cut { return }
        let limit: UInt64
        switch machine.state {
        case .idle: limit = context.idleTimeoutTicks
        case .readingHead: limit = context.headTimeoutTicks
        case .readingBody: limit = context.bodyTimeoutTicks
        case .streaming:  // only while the body waits for the client, not for the handler
            guard streamedBody?.hasRoom ?? false else { return }
            limit = context.bodyTimeoutTicks
        case .lingering: limit = context.headTimeoutTicks
        default: return
        }
        guard tick &- stateSince >= limit else { return }
        switch machine.timedOut() {
        case .closeNow:
            tcp.close()
        case .refuse(let status):
            context.logger.notice("request timed out", metadata: ["status": "\(status.code)"])
            writeRefusal(status)
        default:
            break
        }
    }
}
