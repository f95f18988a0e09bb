import LoopKit
import LoopKitNet

// Every deadline of an HTTP connection, checked by its loop's sweep (``HTTPLoopContext``): one per state
// for what the client must send (head, body, idle), and two for what it must take (write progress, close
// drain, ``OutputDeadlines``), which hold in every state and, after an upgrade, for the protocol upgraded to
// (``ServedWebSocket``). Each is stamped on the loop's clock and compared with the sweep's reading of it: a
// deadline is never noticed before it passed, and at most one sweep interval after.

extension HTTPConnection {
    /// The registry's sweep (``HTTPLoopContext/registry``), with the loop's clock as it read it.
    func checkDeadlines(_ connection: Connection, now: EventLoopClock.Instant) {
        checkTimeout(now: now.nanoseconds)
    }

    /// Called by the loop's sweep (``HTTPLoopContext``) with the loop's clock: ends the connection when
    /// the client has stopped taking its output, when a close cannot drain, or when its state has lasted
    /// too long.
    func checkTimeout(now: UInt64) {
        guard !isClosed else { return }
        if OutputDeadlines.cutIfStuck(tcp, now: now, context: context) { return }
        let limit: UInt64
        switch machine.state {
        case .idle: limit = context.idleTimeout
        case .readingHead: limit = context.headTimeout
        case .readingBody: limit = context.bodyTimeout
        case .streaming:  // only while the body waits for the client, not for the handler
            guard streamedBody?.hasRoom ?? false else { return }
            limit = context.bodyTimeout
        case .lingering: limit = context.headTimeout
        default: return
        }
        guard now >= stateSince.addingSaturated(limit) else { return }
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

extension UInt64 {
    /// `self + other`, or `UInt64.max` past it: a deadline that never comes rather than one that wraps.
    func addingSaturated(_ other: UInt64) -> UInt64 {
        let (sum, overflow) = addingReportingOverflow(other)
        return overflow ? .max : sum
    }
}
