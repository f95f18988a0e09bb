import HTTPTypes
import LoopKit
import LoopKitNet

// The HTTP/1 side of an upgrade (RFC 9110 §7.8): the `101` written into the connection's output, then the
// TCP connection handed to the new protocol's handler. Which requests upgrade, the route's say and the
// middleware are the dispatcher's (`HTTPDispatcher+Upgrade.swift`).

extension HTTPConnection {
    /// Writes the `101 Switching Protocols` bytes; false when the connection is closing or closed.
    func writeSwitchingProtocols(_ bytes: [UInt8]) -> Bool {
        let written = bytes.withUnsafeBytes { bytes in Result { () throws(NetError) in try tcp.write(copying: bytes) } }
        guard case .success = written else { return false }
        return true
    }

    /// Hands the connection over: the new protocol's handler becomes the TCP connection's (lent the bytes
    /// read after the request; the TCP connection stays in the loop's registry, counted once, drained and
    /// swept through its handler), and the protocol starts. Nothing holds this HTTP connection any more: it
    /// is released once its caller returns. Loop thread.
    ///
    /// The upgrade itself never runs in a task of the new protocol's: a task keeps the async frames of
    /// everything it is inside while it waits, and an idle WebSocket's handler waits for as long as it
    /// is open. Run from the task that asked `shouldUpgrade` or ran the middleware, the upgrade kept
    /// those frames too (Swift's task allocator held three 1 KiB slabs per idle WebSocket of `/ws/echo`
    /// then, one now: the task's executor preference and the handler's frames share it).
    func handOver<Upgrader: HTTPUpgrader>(to upgrader: Upgrader, acceptance: Upgrader.Acceptance, request: HTTPServerRequest) {
        machine.upgraded()
        isClosed = true
        let context = context
        let handler = upgrader.takeOver(tcp, acceptance: acceptance, context: context)
        tcp.replaceHandler(handler)
        tcp.resumeReading()
        upgrader.start(handler, request: request, context: context)
    }
}
