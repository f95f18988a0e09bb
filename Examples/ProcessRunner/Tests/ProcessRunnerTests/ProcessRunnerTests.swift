import LoopKit
import LoopKitHTTP
import LoopKitHTTPTesting
import ProcessRunnerApp
import Testing

/// The service on two loops with real child processes, in memory (a client per loop) and live.
@Suite("Process runner")
final class ProcessRunnerTests {
    let group = try! LoopGroup(threads: 2)
    let router = makeRouter(runs: Runs(commands: [
        "greet": Command("/bin/sh", "-c", "echo a; echo b"),
        "fail": Command("/bin/sh", "-c", "echo oops; exit 3"),
        "flood": Command("/bin/sh", "-c", "echo first; head -c 5000 /dev/zero | tr '\\0' x; echo; echo never; sleep 30"),
    ], maxLineLength: 4096))
    deinit { group.shutdown() }

    func client(_ mode: HTTPTestMode) throws -> HTTPTestClient {
        var configuration = makeConfiguration()
        // Between two requests an async test waits for a thread of Swift's pool, which the whole suite's
        // blocking tests can hold for over a minute (make test-sanitize): not long enough to close the connection.
        configuration.idleTimeout = .seconds(600)
        return try HTTPTestClient(router: router, configuration: configuration, mode: mode, group: group)
    }

    /// The events of `path`'s stream, to its end, as `type: data`.
    func events(_ path: String, through client: HTTPTestClient) async throws -> [String] {
        try await client.send(HTTPRequest(method: .get, scheme: nil, authority: nil, path: path))
        var events: [String] = []
        while let event = try await client.nextEvent() { events.append("\(event.event ?? "message"): \(event.data)") }
        return events
    }

    @Test(arguments: HTTPTestMode.allCases)
    func aRunStreamsItsLinesThenItsExit(mode: HTTPTestMode) async throws {
        let client = try client(mode)
        let created = try await client.execute(.post, "/runs", json: RunDraft(command: "greet"))
        #expect(created.status == .created)
        #expect(created.headerFields[.location] == "/runs/1")
        #expect(try await events("/runs/1/events", through: client) == ["line: a", "line: b", "exit: exited(0)"])
        let status = try await client.execute(.get, "/runs/1").decode(as: RunStatus.self)
        #expect(!status.running && status.lines == 2 && status.exitStatus == 0 && status.signal == nil)
    }

    @Test(arguments: HTTPTestMode.allCases)
    func aWebSocketGetsTheLinesAndTheExitInItsCloseFrame(mode: HTTPTestMode) async throws {
        let client = try client(mode)
        _ = try await client.execute(.post, "/runs", json: RunDraft(command: "fail"))
        let socket = try await client.webSocket("/runs/1/log")
        #expect(try await socket.receive() == .text("oops"))
        await #expect(throws: WebSocketTestClientError.closed(code: .normalClosure, reason: "exited(3)")) { try await socket.receive() }
    }

    @Test(arguments: HTTPTestMode.allCases)
    func aClientThatComesAfterTheEndSeesTheWholeLog(mode: HTTPTestMode) async throws {
        let (first, late) = (try client(mode), try client(mode))  // on the group's two loops
        _ = try await first.execute(.post, "/runs", json: RunDraft(command: "greet"))
        let seen = try await events("/runs/1/events", through: first)  // the run has ended when this returns
        #expect(try await events("/runs/1/events", through: late) == seen)
        let socket = try await late.webSocket("/runs/1/log")
        #expect(try await socket.receive() == .text("a"))
        #expect(try await socket.receive() == .text("b"))
        await #expect(throws: WebSocketTestClientError.closed(code: .normalClosure, reason: "exited(0)")) { try await socket.receive() }
    }

    @Test(arguments: HTTPTestMode.allCases)
    func aLineOverTheLimitStopsTheRun(mode: HTTPTestMode) async throws {
        let client = try client(mode)
        _ = try await client.execute(.post, "/runs", json: RunDraft(command: "flood"))
        #expect(try await events("/runs/1/events", through: client)
            == ["line: first", "error: a line longer than 4096 bytes, without a newline", "exit: signaled(15)"])
        #expect(try await client.execute(.get, "/runs/1").decode(as: RunStatus.self).signal == 15)
    }

    @Test(arguments: HTTPTestMode.allCases)
    func onlyAllowedCommandsRun(mode: HTTPTestMode) async throws {
        let client = try client(mode)
        let refused = try await client.execute(.post, "/runs", json: RunDraft(command: "rm -rf /"))
        #expect(refused.status == .unprocessableContent)
        #expect(refused.text == #"{"error":{"status":422,"message":"no command rm -rf /; there are fail, flood, greet"}}"#)
        #expect(try await client.execute(.get, "/runs/1").text == #"{"error":{"status":404,"message":"no run 1"}}"#)
    }

    @Test(arguments: HTTPTestMode.allCases)
    func aWebSocketForNoRunIsRefusedAsJSON(mode: HTTPTestMode) async throws {
        let client = try client(mode)
        let error = await #expect(throws: WebSocketTestClientError.self) { _ = try await client.webSocket("/runs/9/log") }
        guard case .notUpgraded(let response)? = error else { return }
        #expect(response.status == .notFound)
        #expect(response.text == #"{"error":{"status":404,"message":"no run 9"}}"#)
    }
}
