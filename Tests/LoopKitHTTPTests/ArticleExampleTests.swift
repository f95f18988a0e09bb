import HTTPTypes
import LoopKit
import LoopKitHTTP
import LoopKitHTTPTesting
import Testing

/// What the DocC articles' JSON, parameter and progress examples answer (Tests/ArticleExampleTests compiles
/// every example as written; this suite serves these and checks the statuses the articles promise).
@Suite("The articles' examples")
struct ArticleExampleTests {
    // Serving HTTP: JSON.
    struct NewTodo: Codable { var title: String }
    struct Todo: Codable { var id: Int; var title: String; var done: Bool }

    // WebSockets and events: progress on the wire.
    actor Jobs {                                  // every loop's handlers reach it with `await`
        var running: [Int: TaskProgress] = [:]
        func progress(of id: Int) -> TaskProgress? { running[id] }
        init(running: [Int: TaskProgress] = [:]) { self.running = running }
    }

    static func servingHTTPRouter() -> HTTPRouter {
        var router = HTTPRouter()
        router.post("/todos") { request in
            let new = try request.decode(as: NewTodo.self)                          // 400 when it is not a NewTodo
            return try .json(Todo(id: 1, title: new.title, done: false), status: .created)
        }
        router.get("/todos/:id") { request in
            let id = try request.parameters.require("id", as: Int.self)             // /todos/x: 400
            return .text("todo \(id)")
        }
        router.get("/search") { request in
            let term = try request.require(query: "q")                              // /search: 400
            let limit = try request.query("limit", as: Int.self) ?? 20              // ?limit=ten: 400
            return .text("\(term), first \(limit)")
        }
        return router
    }

    static func progressRouter(jobs: Jobs) -> HTTPRouter {
        var router = HTTPRouter()
        router.get("/jobs/:id/events", .inTask) { request in
            let id = try request.parameters.require("id", as: Int.self)           // 400 when not a number
            guard let progress = await jobs.progress(of: id) else { throw HTTPError(.notFound, "no job \(id)") }
            return .progressEvents(progress)
        }
        router.webSocket("/ws/jobs/:id", .inTask) { request, socket in
            let id = try request.parameters.require("id", as: Int.self)
            if let progress = await jobs.progress(of: id) { try await socket.send(progress: progress) }
        }
        return router
    }

    @Test(arguments: HTTPTestMode.allCases)
    func servingHTTPsJSONAndParameterExamplesAnswer(mode: HTTPTestMode) throws {
        let client = try HTTPTestClient(router: Self.servingHTTPRouter(), mode: mode)
        let created = try client.execute(.post, "/todos", json: NewTodo(title: "milk"))
        #expect(created.status == .created)
        #expect(try created.decode(as: Todo.self).title == "milk")
        #expect(try client.execute(.post, "/todos", body: Bytes("{}")).status == .badRequest)
        #expect(try client.execute(.get, "/todos/7").text == "todo 7")
        #expect(try client.execute(.get, "/todos/x").status == .badRequest)
        #expect(try client.execute(.get, "/search?q=tea+pot&limit=3").text == "tea pot, first 3")
        #expect(try client.execute(.get, "/search").status == .badRequest)
    }

    @Test func webSocketsAndEventsProgressExampleAnswersLiveAnd404s() throws {
        let progress = TaskProgress(totalUnitCount: 1)
        progress.completedUnitCount = 1
        let jobs = Jobs(running: [1: progress])
        let client = try HTTPTestClient(router: Self.progressRouter(jobs: jobs), mode: .live)
        #expect(try client.execute(.get, "/jobs/2/events").status == .notFound)
        #expect(try client.execute(.get, "/jobs/x/events").status == .badRequest)
        let events = try client.execute(.get, "/jobs/1/events")
        #expect(events.headerFields[.contentType]?.hasPrefix("text/event-stream") == true)
        #expect(events.text.contains("event: finished"))
    }
}
