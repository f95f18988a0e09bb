import LoopKitNet

// Every deadline of an HTTP connection, checked by its loop's sweep (``HTTPLoopContext``): one per state
// for what the client must send (head, body, idle), and two for what it must take (write progress, close
// drain), which hold in every state, an upgraded WebSocket's included.

extension HTTPConnection {
    /// Called by the loop's sweep timer: ends the connection when the client has stopped taking its output,
    /// when a close cannot drain, or when its state has lasted too long.
    func checkTimeout(now tick: UInt64) {
        guard !isClosed else { return }
        if outputIsStuck(now: tick) || closeIsStuck(now: tick) { return }
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

    /// Output waits for the client and none of it has been taken for ``HTTPServer/Configuration/writeTimeout``:
    /// resets the connection (its writers learn it closed) and returns true.
    private func outputIsStuck(now tick: UInt64) -> Bool {
        guard tcp.bufferedOutputCount > 0 else {
            if outputWatch != nil { outputWatch = nil }
            return false
        }
        let sent = tcp.bytesSent
        guard let watch = outputWatch, watch.bytesSent == sent else {
            outputWatch = OutputWatch(bytesSent: sent, since: tick)
            return false
        }
        guard tick &- watch.since >= context.writeTimeoutTicks else { return false }
        cut(.writeProgress, pending: tcp.bufferedOutputCount)
        return true
    }

    /// The connection is closing and has not sent what it holds within
    /// ``HTTPServer/Configuration/closeTimeout``: resets it and returns true.
    private func closeIsStuck(now tick: UInt64) -> Bool {
        guard tcp.isClosing else { return false }
        guard let since = closingSince else {
            closingSince = tick
            return false
        }
        guard tick &- since >= context.closeTimeoutTicks else { return false }
        cut(.closeDrain, pending: tcp.bufferedOutputCount)
        return true
    }

    /// Resets the connection for `deadline`: logged at `debug`, counted through the configuration's hook.
    private func cut(_ deadline: HTTPServer.Configuration.Deadline, pending: Int) {
        context.logger.debug("connection reset: the client took no output in time",
                             metadata: ["deadline": "\(deadline.rawValue)", "pending": "\(pending)"])
        context.configuration.connectionCut?(deadline)
        tcp.abort()
    }
}
