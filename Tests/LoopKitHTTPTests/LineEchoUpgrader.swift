import HTTPTypes
import LoopKit
import LoopKitNet
@testable import LoopKitHTTP

/// A test-only upgrade to a trivial protocol, through the HTTP connection's generic upgrade path: after
/// `Upgrade: line-echo`, every line the client sends comes back; a graceful shutdown says `bye` and closes.
/// It proves the ``HTTPUpgrader`` protocol is enough for a protocol LoopKitHTTP does not know.
struct LineEchoUpgrader: HTTPUpgrader {
    static let upgradeField = HTTPField.Name("Upgrade")!

    /// The route's check, when it has one.
    var shouldUpgrade: (@Sendable (HTTPServerRequest) async throws -> HTTPUpgradeDecision)?
    /// The paths of the requests the protocol started with, in order.
    var started = Recorder<String>()
    /// The shortest deadline the protocol says it keeps (the server's sweep ticks fast enough for it).
    var deadline: Duration?

    var shortestDeadline: Duration? { deadline }

    func check(_ head: HTTPRequestHead) -> HTTPUpgradeCheck<String> {
        guard let upgrade = head.request.headerFields[Self.upgradeField], upgrade.lowercased() == "line-echo" else {
            var response = HTTPServerResponse.text("this resource speaks line-echo only", status: .upgradeRequired)
            response.head.headerFields[Self.upgradeField] = "line-echo"
            return .refused(response)
        }
        return .accepted(upgrade)
    }

    var asksRoute: Bool { shouldUpgrade != nil }

    func shouldUpgrade(_ request: HTTPServerRequest) async throws -> HTTPUpgradeDecision {
        try await shouldUpgrade?(request) ?? .accept([:])
    }

    func switchingProtocols(_ acceptance: String, fields: HTTPFields) -> [UInt8] {
        var head = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: \(acceptance)\r\nConnection: Upgrade\r\n"
        for field in fields { head += "\(field.name.rawName): \(field.value)\r\n" }
        return Array((head + "\r\n").utf8)
    }

    func takeOver(_ tcp: Connection, acceptance: String, context: HTTPLoopContext) -> LineEchoHandler {
        LineEchoHandler()
    }

    func start(_ handler: LineEchoHandler, request: HTTPServerRequest, context: HTTPLoopContext) {
        started.record(String(request.path))
    }
}

/// The line-echo protocol's handler: writes back every complete line, and leaves a partial one buffered;
/// the server's drain makes it say `bye` and close. It records the ticks of the server's deadline sweep.
final class LineEchoHandler: ConnectionHandler {
    /// When the sweep asked the handler to check its deadlines: the loop's clock, in nanoseconds.
    var sweptAt: [UInt64] = []

    func checkDeadlines(_ connection: Connection, now: EventLoopClock.Instant) { sweptAt.append(now.nanoseconds) }

    func connectionShouldDrain(_ connection: Connection) {
        _ = Result { () throws(NetError) in try connection.write("bye\n") }
        connection.close()
    }

    func connection(_ connection: Connection, received bytes: UnsafeRawBufferPointer) -> Int {
        guard let last = bytes.lastIndex(of: UInt8(ascii: "\n")) else { return 0 }
        let lines = UnsafeRawBufferPointer(rebasing: bytes[...last])
        _ = Result { () throws(NetError) in try connection.write(copying: lines) }
        return lines.count
    }
}
