import HTTPTypes
import LoopKit
import LoopKitHTTP
import LoopKitHTTPTesting
import LoopKitTesting
import Testing

/// The WebSockets and events article's chat room: a message from a socket on one loop reaches the sockets
/// on every loop, each sent by a task on its own socket's loop.
@Suite("WebSocket fan-out across loops")
struct WebSocketFanOutTests {
    /// The article's room, as written there: a `Broadcast` any loop sends to.
    static func router(room: Broadcast<String>) -> HTTPRouter {
        var router = HTTPRouter()
        router.webSocket("/chat", .inTask) { request, socket in
            let name = try request.require(query: "name")
            let messages = room.subscribe()
            let sender = Task(executorPreference: socket.loop) {           // to this client, on its own loop
                for await text in messages { try await socket.send(.text(text)) }
            }
            defer { sender.cancel(); room.send("\(name) left") }
            room.send("\(name) joined")
            for try await case .text(let text) in socket.messages {       // from this client, to every loop
                room.send("\(name): \(text)")
            }
        }
        return router
    }

    /// Alice and Bob chat (Bob, joining late, first sees what the room replays); Bob leaves.
    static func chat(alice: HTTPTestClient, bob: HTTPTestClient) throws {
        let aliceSocket = try alice.webSocket("/chat?name=alice")
        #expect(try aliceSocket.receive() == .text("alice joined"))
        let bobSocket = try bob.webSocket("/chat?name=bob")
        #expect(try bobSocket.receive() == .text("alice joined"))  // replayed
        #expect(try bobSocket.receive() == .text("bob joined"))
        #expect(try aliceSocket.receive() == .text("bob joined"))
        try aliceSocket.send("hi")
        #expect(try bobSocket.receive() == .text("alice: hi"))
        #expect(try aliceSocket.receive() == .text("alice: hi"))
        #expect(try bobSocket.close() == .normalClosure)
        #expect(try aliceSocket.receive() == .text("bob left"))
    }

    @Test(arguments: HTTPTestMode.allCases)
    func aMessageReachesTheSocketsOnBothLoops(mode: HTTPTestMode) throws {
        let group = try LoopGroup(threads: 2)
        defer { group.shutdown() }
        let router = Self.router(room: Broadcast(replay: 20, bufferLimit: 1_000))
        let alice = try HTTPTestClient(router: router, mode: mode, group: group)
        let bob = try HTTPTestClient(router: router, mode: mode, group: group)
        defer { alice.shutDown(); bob.shutDown() }
        try Self.chat(alice: alice, bob: bob)
    }

    @Test func twoClientsOfOneDriverChatInMemoryOnVirtualTime() throws {
        let driver = try LoopDriver()
        let router = Self.router(room: Broadcast(replay: 20, bufferLimit: 1_000))
        let alice = try HTTPTestClient(router: router, driver: driver)
        let bob = try HTTPTestClient(router: router, driver: driver)
        try Self.chat(alice: alice, bob: bob)
    }
}
