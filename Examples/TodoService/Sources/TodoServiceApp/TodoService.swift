import LoopKit
import LoopKitHTTP
import Synchronization

/// A todo, as the API sends it.
public struct Todo: Codable, Sendable, Equatable {
    public var id: Int
    public var title: String
    public var done: Bool
    public init(id: Int, title: String, done: Bool) { self.id = id; self.title = title; self.done = done }
}

/// A todo as a client sends it (`done` optional).
public struct TodoDraft: Codable, Sendable {
    public var title: String
    public var done: Bool?
    public init(title: String, done: Bool? = nil) { self.title = title; self.done = done }
}

/// The todos, shared by every loop's handlers: an actor, reached with `await`.
public actor TodoStore {
    private var todos: [Int: Todo] = [:]
    private var lastID = 0
    public init() {}

    func all() -> [Todo] { todos.values.sorted { $0.id < $1.id } }
    func todo(_ id: Int) -> Todo? { todos[id] }
    func add(_ draft: TodoDraft) -> Todo {
        lastID += 1
        todos[lastID] = Todo(id: lastID, title: draft.title, done: draft.done ?? false)
        return todos[lastID]!
    }
    func update(_ id: Int, with draft: TodoDraft) -> Todo? {
        guard todos[id] != nil else { return nil }
        todos[id]!.title = draft.title
        if let done = draft.done { todos[id]!.done = done }
        return todos[id]
    }
    func remove(_ id: Int) -> Todo? { todos.removeValue(forKey: id) }
}

/// Running jobs by id.
public final class Jobs: Sendable {
    private let jobs = Mutex<[Int: ProcessingJob]>([:])
    private let lastID = Atomic<Int>(0)
    public init() {}

    func add(_ job: ProcessingJob) -> Int {
        let id = lastID.add(1, ordering: .relaxed).newValue
        jobs.withLock { $0[id] = job }
        return id
    }
    subscript(id: Int) -> ProcessingJob? { jobs.withLock { $0[id] } }
}

/// The service's configuration on `port`: errors (thrown, unrouted, refused) answer as JSON.
public func makeConfiguration(port: Int = 0) -> HTTPServer.Configuration {
    var configuration = HTTPServer.Configuration(port: port)
    configuration.errorRenderer = .json
    return configuration
}

/// The service's routes: a chat `room` on every loop. `work` is what a job does per item (a test gives it a virtual cost).
public func makeRouter(store: TodoStore, room: Broadcast<String>, jobs: Jobs,
                       work: @escaping @Sendable (Int) -> Void = { _ in }) -> HTTPRouter {
    var router = HTTPRouter()
    router.get("/todos", .inTask) { _ in try .json(await store.all()) }
    router.post("/todos", .inTask) { request in
        try .json(await store.add(request.decode(as: TodoDraft.self)), status: .created)
    }
    router.get("/todos/:id", .inTask) { request in
        let id = try request.parameters.require("id", as: Int.self)
        guard let todo = await store.todo(id) else { throw HTTPError(.notFound, "no todo \(id)") }
        return try .json(todo)
    }
    router.put("/todos/:id", .inTask) { request in
        let id = try request.parameters.require("id", as: Int.self)
        guard let todo = await store.update(id, with: try request.decode(as: TodoDraft.self)) else {
            throw HTTPError(.notFound, "no todo \(id)")
        }
        return try .json(todo)
    }
    router.delete("/todos/:id", .inTask) { request in
        let id = try request.parameters.require("id", as: Int.self)
        guard await store.remove(id) != nil else { throw HTTPError(.notFound, "no todo \(id)") }
        return HTTPServerResponse(status: .noContent)
    }

    router.webSocket("/chat", .inTask) { request, socket in
        let name = try request.require(query: "name")
        let messages = room.subscribe()
        let sender = Task(executorPreference: socket.loop) {           // to this client, on its own loop
            for await text in messages { try await socket.send(.text(text)) }
        }
        defer { sender.cancel(); room.send("\(name) left") }
        room.send("\(name) joined")
        for try await case .text(let text) in socket.messages { room.send("\(name): \(text)") }
    }

    router.post("/jobs") { request in
        let items = try request.query("items", as: Int.self) ?? 2_000_000
        let job = try request.loop.process(0..<items, each: work, completion: { _ in })
        return try .json(["id": jobs.add(job)], status: .accepted)
    }
    router.get("/jobs/:id/events") { request in
        let id = try request.parameters.require("id", as: Int.self)
        guard let job = jobs[id] else { throw HTTPError(.notFound, "no job \(id)") }
        return .progressEvents(job.progress, cancelsWhenAbandoned: true)  // a job nobody watches stops
    }
    return router
}
