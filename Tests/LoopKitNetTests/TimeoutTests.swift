import Glibc
import LoopKit
import LoopKitNet
import Testing

/// Each timeout ends the connection with its own reason. (Short timeouts so the tests are quick; no
/// assertion is made on how long anything took.)
@Suite("Timeouts: read, write, idle, connect")
struct TimeoutTests {
    func closeReason(with configure: (inout ConnectionOptions) -> Void, server: @escaping @Sendable (Connection) -> Void,
                     client: @escaping @Sendable (Connection) async throws -> Void) async throws -> CloseReason? {
        let group = try LoopGroup(threads: 1)
        defer { group.shutdown() }
        var options = ListenerOptions()
        configure(&options.connection)
        let reasons = Recorder<CloseReason>()
        let listener = try TCPListener.bind(host: "127.0.0.1", port: 0, on: group.loops[0], options: options, onAccept: { connection in
            connection.onClose { reasons.record($0) }
            server(connection)
        })
        let loop = group.loops[0]
        let connection = try await onLoop(loop) { try await Connection.connect(to: listener.localAddress, on: loop) }
        try await onLoop(loop) { try await client(connection) }
        await eventually { !reasons.all.isEmpty }
        try await read(on: loop) { connection.abort() }
        await listener.shutdown()
        #expect(reasons.all.count == 1)
        return reasons.all.first
    }

    @Test func aSilentPeerHitsTheReadTimeout() async throws {
        let reason = try await closeReason(with: { $0.readTimeout = .milliseconds(30) },
                                           server: { _ in }, client: { _ in })
        #expect(reason == .timedOut(.read))
    }

    @Test func aPeerThatNeverReadsHitsTheWriteTimeout() async throws {
        let reason = try await closeReason(with: { $0.writeTimeout = .milliseconds(30) }, server: { connection in
            try? connection.write(Bytes(Array(repeating: 0, count: 16 * 1024 * 1024)))
        }, client: { connection in connection.pauseReading() })
        #expect(reason == .timedOut(.write))
    }

    @Test func noTrafficHitsTheIdleTimeout() async throws {
        let reason = try await closeReason(with: { $0.idleTimeout = .milliseconds(30) },
                                           server: { _ in }, client: { _ in })
        #expect(reason == .timedOut(.idle))
    }

    @Test func aConnectThatGetsNoAnswerTimesOut() async throws {
        let unanswered = try UnansweredAddress()
        defer { unanswered.close() }
        let port = unanswered.address.port
        let group = try LoopGroup(threads: 1)
        defer { group.shutdown() }
        let loop = group.loops[0]
        await #expect(throws: NetError.connectTimedOut) {
            _ = try await onLoop(loop) {
                try await Connection.connect(host: "127.0.0.1", port: port, on: loop, timeout: .milliseconds(50))
            }
        }
    }
}
