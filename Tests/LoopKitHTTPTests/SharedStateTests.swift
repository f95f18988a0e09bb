import HTTPTypes
import LoopKit
import LoopKitHTTP
import LoopKitHTTPTesting
import Testing

/// The Serving HTTP article's three homes for state shared by a multi-loop server, served from
/// `LoopGroup(threads: 2)` with requests on both loops, in memory and live.
@Suite("Shared state in a multi-loop server")
struct SharedStateTests {
    struct NewTodo: Codable { var title: String }
    struct Todo: Codable, Equatable { var id: Int; var title: String; var done: Bool }

    actor TodoStore {
        private var todos: [Int: Todo] = [:]
        private var nextID = 1
        func add(_ title: String) -> Todo {
            defer { nextID += 1 }
            let todo = Todo(id: nextID, title: title, done: false)
            todos[todo.id] = todo
            return todo
        }
        func todo(_ id: Int) -> Todo? { todos[id] }
    }

    /// Not `Sendable`: lives on one loop, reached with `perform`.
    final class TodoList {
        var titles: [String] = []
        func add(_ title: String) -> Todo {
            titles.append(title)
            return Todo(id: titles.count, title: title, done: false)
        }
    }

    /// The routes, each answering with the index of the loop it ran on (`X-Loop`).
    static func router(group: LoopGroup, store: TodoStore, list: LoopBound<TodoList>,
                       hits: [ObjectIdentifier: LoopBound<Int>]) -> HTTPRouter {
        var router = HTTPRouter()
        router.post("/todos", .inTask) { request in
            let new = try request.decode(as: NewTodo.self)
            return try .json(await store.add(new.title), status: .created)
        }
        router.get("/todos/:id", .inTask) { request in
            let id = try request.parameters.require("id", as: Int.self)
            guard let todo = await store.todo(id) else { throw HTTPError(.notFound, "no todo \(id)") }
            return try .json(todo)
        }
        router.post("/list", .inTask) { request in
            let new = try request.decode(as: NewTodo.self)
            return try .json(await list.perform { $0.add(new.title) }, status: .created)
        }
        router.get("/hello") { request in
            hits[ObjectIdentifier(request.loop)]!.value += 1                        // this loop's own count
            return .text("Hello")
        }
        router.use(after: { response, request in
            response.head.headerFields[HTTPField.Name("X-Loop")!] = "\(group.loops.firstIndex { $0 === request.loop }!)"
        })
        return router
    }

    final class Fixture {
        let group: LoopGroup
        let store = TodoStore()
        let list: LoopBound<TodoList>
        let hits: [ObjectIdentifier: LoopBound<Int>]
        let router: HTTPRouter

        init() throws {
            group = try LoopGroup(threads: 2)
            list = LoopBound(TodoList(), on: group.loops[0])
            hits = Dictionary(uniqueKeysWithValues: group.loops.map { (ObjectIdentifier($0), LoopBound(0, on: $0)) })
            router = SharedStateTests.router(group: group, store: store, list: list, hits: hits)
        }

        /// Clients on the group until two of them are served on different loops (in memory the second
        /// is; live, the kernel spreads connections, so a few more may be needed).
        func clientsOnBothLoops(mode: HTTPTestMode) throws -> [HTTPTestClient] {
            var byLoop: [String: HTTPTestClient] = [:]
            for _ in 0..<64 where byLoop.count < 2 {
                let client = try HTTPTestClient(router: router, mode: mode, group: group)
                let loop = try #require(try client.execute(.get, "/hello").headerFields[HTTPField.Name("X-Loop")!])
                if byLoop[loop] == nil { byLoop[loop] = client } else { client.shutDown() }
            }
            return try #require(byLoop.count == 2 ? [byLoop["0"]!, byLoop["1"]!] : nil)
        }
    }

    @Test(arguments: HTTPTestMode.allCases)
    func anActorStoreServesBothLoopsOfATwoLoopGroup(mode: HTTPTestMode) throws {
        let fixture = try Fixture()
        defer { fixture.group.shutdown() }
        let clients = try fixture.clientsOnBothLoops(mode: mode)
        defer { clients.forEach { $0.shutDown() } }
        let created = try clients[0].execute(.post, "/todos", json: NewTodo(title: "milk"))
        #expect(created.status == .created)
        #expect(created.headerFields[HTTPField.Name("X-Loop")!] == "0")
        let read = try clients[1].execute(.get, "/todos/1")
        #expect(read.headerFields[HTTPField.Name("X-Loop")!] == "1")
        #expect(try read.decode(as: Todo.self) == Todo(id: 1, title: "milk", done: false))
        #expect(try clients[1].execute(.get, "/todos/2").status == .notFound)
    }

    @Test(arguments: HTTPTestMode.allCases)
    func aLoopBoundReachedWithPerformServesBothLoops(mode: HTTPTestMode) throws {
        let fixture = try Fixture()
        defer { fixture.group.shutdown() }
        let clients = try fixture.clientsOnBothLoops(mode: mode)
        defer { clients.forEach { $0.shutDown() } }
        #expect(try clients[1].execute(.post, "/list", json: NewTodo(title: "from loop 1")).decode(as: Todo.self).id == 1)
        #expect(try clients[0].execute(.post, "/list", json: NewTodo(title: "from loop 0")).decode(as: Todo.self).id == 2)
        #expect(try fixture.list.invokeAndWait { $0.titles } == ["from loop 1", "from loop 0"])
    }

    @Test(arguments: HTTPTestMode.allCases)
    func aLoopBoundPerLoopIsReadDirectlyOnEachLoop(mode: HTTPTestMode) throws {
        let fixture = try Fixture()
        defer { fixture.group.shutdown() }
        let clients = try fixture.clientsOnBothLoops(mode: mode)
        defer { clients.forEach { $0.shutDown() } }
        for _ in 0..<3 { _ = try clients[1].execute(.get, "/hello") }
        let counts = try fixture.group.loops.map { loop in try fixture.hits[ObjectIdentifier(loop)]!.invokeAndWait { $0 } }
        #expect(counts[0] >= 1)
        #expect(counts[1] >= 4)
        #expect(counts.reduce(0, +) >= 5)
    }
}
