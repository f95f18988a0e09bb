import HTTPTypes
import LoopKit
import LoopKitHTTPTesting
import LoopKitNet
import LoopKitTesting
import Testing
@testable import LoopKitHTTP

/// An ``HTTPTestClient`` in an `async` test: after each `await` the test may run on another thread, and
/// the in-memory client used to reach `Connection.write`'s precondition there, which killed the whole test
/// process (issue 43, item 2).
@Suite("HTTPTestClient across awaits")
struct TestClientThreadTests {
    private static func router() -> HTTPRouter {
        var router = HTTPRouter()
        router.on(.get, "/x") { _ in .text("x") }
        router.on(.get, "/async", .inTask) { _ async -> HTTPServerResponse in
            await Task.yield()
            return .text("later")
        }
        return router
    }

    /// Timeouts no starved test can reach: in a full parallel run a test task may wait many seconds for a
    /// thread between two awaits, and the live server's head and idle timeouts would close its connection.
    static var patient: HTTPServer.Configuration {
        var configuration = HTTPServer.Configuration()
        configuration.headTimeout = .seconds(600)
        configuration.idleTimeout = .seconds(600)
        configuration.bodyTimeout = .seconds(600)
        return configuration
    }

    @Test("The async client answers after awaits that move the test between threads", arguments: HTTPTestMode.allCases)
    func asyncExecuteAcrossAwaits(mode: HTTPTestMode) async throws {
        let client = try HTTPTestClient(router: Self.router(), configuration: Self.patient, mode: mode)
        for _ in 0..<50 {
            try await Task.sleep(for: .milliseconds(1))
            let response = try await client.execute(.get, "/x")
            #expect(response.text == "x")
        }
        #expect(try await client.execute(.get, "/async").text == "later")
    }

    @Test("The synchronous client also works from an async test after an await (it waits for its thread)")
    func syncExecuteAcrossAwaits() async throws {
        let client = try HTTPTestClient(router: Self.router())
        for _ in 0..<50 {
            try await Task.sleep(for: .milliseconds(1))
            let response: HTTPTestResponse = try { try client.execute(.get, "/x") }()
            #expect(response.status == .ok)
        }
    }

    @Test("Steps and virtual time through the async client stay deterministic")
    func asyncStepsAndVirtualTime() async throws {
        var configuration = HTTPServer.Configuration()
        configuration.idleTimeout = .seconds(5)
        let client = try HTTPTestClient(router: Self.router(), configuration: configuration)
        #expect(try await client.execute(.get, "/x").status == .ok)
        try await Task.sleep(for: .milliseconds(1))
        try await client.advance(by: .seconds(4))
        #expect(!client.isClosedByServer)
        try await client.advance(by: .seconds(2))
        #expect(try await client.readUntilClosed().isEmpty)
    }

    @Test("The async WebSocket test client echoes across awaits, in memory and live", arguments: HTTPTestMode.allCases)
    func asyncWebSocketAcrossAwaits(mode: HTTPTestMode) async throws {
        let client = try HTTPTestClient(router: webSocketTestRouter(), configuration: Self.patient, mode: mode)
        let socket = try await client.webSocket("/ws/echo")
        for index in 0..<20 {
            try await Task.sleep(for: .milliseconds(1))
            try await socket.send("message \(index)")
            #expect(try await socket.receive() == .text("message \(index)"))
        }
        #expect(try await socket.close() == .normalClosure)
    }

    @Test("A client on the test's driver, called from another thread, throws an error that names the fix")
    func driverBoundClientOffItsThreadThrows() throws {
        let driver = try LoopDriver()
        let client = try HTTPTestClient(router: Self.router(), driver: driver)
        let box = UncheckedClient(client)
        let elsewhere = try LoopGroup(threads: 1)
        defer { elsewhere.shutdown() }
        let thrown: HTTPTestClientError? = try elsewhere.loops[0].invokeAndWait {
            do {
                _ = try box.client.execute(.get, "/x")
                return nil
            } catch {
                return error as? HTTPTestClientError
            }
        }
        guard case .wrongThread(let message) = thrown else {
            Issue.record("expected HTTPTestClientError.wrongThread, got \(String(describing: thrown))")
            return
        }
        #expect(message.contains("HTTPTestClient"))
        #expect(message.contains("try await client.execute"))
        #expect(try client.execute(.get, "/x").text == "x")  // on its own thread it still works
    }
}

/// The client handed to another thread on purpose, to break its rule.
private struct UncheckedClient: @unchecked Sendable {  // the test breaks the client's thread rule on purpose
    let client: HTTPTestClient
    init(_ client: HTTPTestClient) { self.client = client }
}
