import HTTPTypes
import LoopKit
import LoopKitHTTPTesting
import Synchronization
import Testing
@testable import LoopKitHTTP

/// A WebSocket route whose check looks its value up once and hands it to the handler
/// (`router.webSocket(_:_:accepting:_:)`); the check refuses by throwing, before the `101`.
@Suite("WebSocket routes that accept with a value")
struct WebSocketAcceptingTests {
    struct Room: Sendable {
        var name: String
        var greeting: String
    }

    /// How many times a route's check ran.
    final class Lookups: Sendable {
        private let count = Atomic<Int>(0)
        func add() { count.add(1, ordering: .relaxed) }
        var value: Int { count.load(ordering: .relaxed) }
    }

    static let rooms = ["lobby": Room(name: "lobby", greeting: "welcome to the lobby")]

    /// `/rooms/:name` (a task) and `/inline/:name` (callbacks), each counting its lookups in `lookups`.
    static func router(lookups: Lookups) -> HTTPRouter {
        let find: @Sendable (HTTPServerRequest) throws -> Room = { request in
            lookups.add()
            guard let room = rooms[try request.parameters.require("name")] else { throw HTTPError(.notFound, "no such room") }
            return room
        }
        var router = HTTPRouter()
        router.webSocket("/rooms/:name", .inTask, accepting: { request in try find(request) }) { _, socket, room in
            try await socket.send(.text(room.greeting))
            for try await message in socket.messages {
                guard case .text(let text) = message else { continue }
                try await socket.send(.text("\(room.name): \(text)"))
            }
        }
        router.webSocket("/inline/:name", accepting: { request in try find(request) }) { _, socket, room in
            socket.onMessage { message in
                guard case .text(let text) = message else { return }
                do { try socket.write(.text("\(room.name) (inline): \(text)")) } catch { return }
            }
        }
        return router
    }

    @Test(arguments: HTTPTestMode.allCases)
    func theValueTheCheckLooksUpReachesTheHandlerLookedUpOnce(mode: HTTPTestMode) throws {
        let lookups = Lookups()
        let client = try HTTPTestClient(router: Self.router(lookups: lookups), mode: mode)
        let socket = try client.webSocket("/rooms/lobby")
        #expect(try socket.receive() == .text("welcome to the lobby"))
        try socket.send("hi")
        #expect(try socket.receive() == .text("lobby: hi"))
        #expect(try socket.close() == .normalClosure)
        #expect(lookups.value == 1)
    }

    @Test(arguments: HTTPTestMode.allCases)
    func theInlineFormGetsTheValueToo(mode: HTTPTestMode) throws {
        let lookups = Lookups()
        let client = try HTTPTestClient(router: Self.router(lookups: lookups), mode: mode)
        let socket = try client.webSocket("/inline/lobby")
        try socket.send("hi")
        #expect(try socket.receive() == .text("lobby (inline): hi"))
        #expect(lookups.value == 1)
    }

    @Test(arguments: HTTPTestMode.allCases)
    func aCheckThatThrowsHTTPErrorRefusesWithItsStatusBeforeThe101(mode: HTTPTestMode) throws {
        let client = try HTTPTestClient(router: Self.router(lookups: Lookups()), mode: mode)
        #expect {
            _ = try client.webSocket("/rooms/attic")
        } throws: { error in
            guard case WebSocketTestClientError.notUpgraded(let response) = error else { return false }
            return response.status == .notFound && response.text == "no such room"
        }
        #expect(try client.execute(.get, "/nowhere").status == .notFound)  // the connection stayed HTTP
    }

    @Test func theRefusalIsRenderedByTheErrorRenderer() throws {
        var configuration = HTTPServer.Configuration()
        configuration.errorRenderer = .json
        let client = try HTTPTestClient(router: Self.router(lookups: Lookups()), configuration: configuration)
        #expect {
            _ = try client.webSocket("/inline/attic")
        } throws: { error in
            guard case WebSocketTestClientError.notUpgraded(let response) = error else { return false }
            return response.text == #"{"error":{"status":404,"message":"no such room"}}"#
        }
    }

    @Test func behindMiddlewareTheValueStillReachesTheHandlerOnce() throws {
        let lookups = Lookups()
        var router = Self.router(lookups: lookups)
        router.use(AccessLogMiddleware())
        let client = try HTTPTestClient(router: router)
        let socket = try client.webSocket("/rooms/lobby")
        #expect(try socket.receive() == .text("welcome to the lobby"))
        #expect(lookups.value == 1)
        let refused = try HTTPTestClient(router: router)  // the first connection is a WebSocket now
        #expect {
            _ = try refused.webSocket("/rooms/attic")
        } throws: { error in
            guard case WebSocketTestClientError.notUpgraded(let response) = error else { return false }
            return response.status == .notFound
        }
    }

    @Test func anInvalidHandshakeIsRefusedWithoutAskingTheCheck() throws {
        let lookups = Lookups()
        let client = try HTTPTestClient(router: Self.router(lookups: lookups))
        #expect(try client.execute(.get, "/rooms/lobby").status == .upgradeRequired)
        #expect(lookups.value == 0)
    }

    @Test func theAsyncClientReadsTheSameAcrossAwaits() async throws {
        let client = try HTTPTestClient(router: Self.router(lookups: Lookups()), mode: .live)
        let socket = try await client.webSocket("/rooms/lobby")
        #expect(try await socket.receive() == .text("welcome to the lobby"))
        try await socket.send("later")
        #expect(try await socket.receive() == .text("lobby: later"))
    }
}
