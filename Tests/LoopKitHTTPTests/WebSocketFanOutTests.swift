import HTTPTypes
import LoopKit
import LoopKitHTTP
import LoopKitHTTPTesting
import LoopKitTesting
import Synchronization
import Testing

/// The WebSockets and events article's chat room: a message from a socket on one loop reaches the sockets
/// on every loop, each sent by a task on its own socket's loop.
@Suite("WebSocket fan-out across loops")
struct WebSocketFanOutTests {
    /// The article's room, as written there.
    final class ChatRoom: Sendable {
        private let members = Mutex<[Int: AsyncStream<String>.Continuation]>([:])
        private let lastID = Atomic<Int>(0)

        /// A new member's id and the messages for it.
        func join() -> (id: Int, outbox: AsyncStream<String>) {
            let (outbox, member) = AsyncStream.makeStream(of: String.self, bufferingPolicy: .bufferingNewest(1_000))
            let id = lastID.add(1, ordering: .relaxed).newValue
            members.withLock { $0[id] = member }
            return (id, outbox)
        }
        func leave(_ id: Int) { members.withLock { $0.removeValue(forKey: id) }?.finish() }
        func broadcast(_ text: String) { members.withLock { for member in $0.values { member.yield(text) } } }
    }

    static func router(room: ChatRoom) -> HTTPRouter {
        var router = HTTPRouter()
        router.webSocket("/chat", .inTask) { request, socket in
            let name = try request.require(query: "name")
            let (id, outbox) = room.join()
            defer { room.leave(id); room.broadcast("\(name) left") }
            let sender = Task(executorPreference: socket.loop) {           // to this client, on its own loop
                for await text in outbox { try await socket.send(.text(text)) }
            }
            defer { sender.cancel() }
            room.broadcast("\(name) joined")
            for try await case .text(let text) in socket.messages {       // from this client, to every loop
                room.broadcast("\(name): \(text)")
            }
        }
        return router
    }

    /// Alice and Bob chat; Bob leaves.
    static func chat(alice: HTTPTestClient, bob: HTTPTestClient) throws {
        let aliceSocket = try alice.webSocket("/chat?name=alice")
        #expect(try aliceSocket.receive() == .text("alice joined"))
        let bobSocket = try bob.webSocket("/chat?name=bob")
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
        let router = Self.router(room: ChatRoom())
        let alice = try HTTPTestClient(router: router, mode: mode, group: group)
        let bob = try HTTPTestClient(router: router, mode: mode, group: group)
        defer { alice.shutDown(); bob.shutDown() }
        try Self.chat(alice: alice, bob: bob)
    }

    @Test func twoClientsOfOneDriverChatInMemoryOnVirtualTime() throws {
        let driver = try LoopDriver()
        let router = Self.router(room: ChatRoom())
        let alice = try HTTPTestClient(router: router, driver: driver)
        let bob = try HTTPTestClient(router: router, driver: driver)
        try Self.chat(alice: alice, bob: bob)
    }
}
