import LoopKitNet

/// A connection an HTTP upgrade handed to a WebSocket: what its loop's context keeps in place of the
/// released ``HTTPConnection`` — its place among the loop's connections (counted, drained, swept), its
/// output deadlines, and the graceful shutdown (a close handshake with `1001`). The WebSocket's engine is
/// the TCP connection's handler; this is the server's view of it. Loop-confined.
final class UpgradedConnection: ServedConnection {
    let tcp: TCPConnection
    private unowned let context: HTTPLoopContext
    private let webSocket: WebSocket
    private var deadlines = OutputDeadlines()

    /// Takes `tcp`'s place in `context` from the HTTP connection it was upgraded from. Loop thread.
    init(tcp: TCPConnection, webSocket: WebSocket, context: HTTPLoopContext) {
        self.tcp = tcp
        self.webSocket = webSocket
        self.context = context
        tcp.onClose { [unowned self] _ in context.remove(self) }
    }

    func checkTimeout(now tick: UInt64) {
        guard !tcp.isClosed else { return }
        _ = deadlines.cutIfStuck(tcp, now: tick, context: context)
    }

    func shutdown() {
        guard !tcp.isClosed else { return }
        webSocket.close(code: .goingAway, reason: "server shutting down")
    }
}
