import LoopKit
import LoopKitHTTP

/// What `POST /runs` takes: the name of an allowed command.
public struct RunDraft: Codable, Sendable {
    public var command: String
    public init(command: String) { self.command = command }
}

/// The service's configuration on `port`: errors (thrown, unrouted, refused) answer as JSON.
public func makeConfiguration(port: Int = 0) -> HTTPServer.Configuration {
    var configuration = HTTPServer.Configuration(port: port)
    configuration.errorRenderer = .json
    return configuration
}

/// The service's routes: start a run, see its status, follow its log as server-sent events or over a WebSocket.
public func makeRouter(runs: Runs) -> HTTPRouter {
    @Sendable func run(_ request: HTTPServerRequest) throws -> Run {
        let id = try request.parameters.require("id", as: Int.self)
        guard let run = runs[id] else { throw HTTPError(.notFound, "no run \(id)") }
        return run
    }
    var router = HTTPRouter()
    router.post("/runs") { request in
        let run = try runs.start(request.decode(as: RunDraft.self).command, on: request.loop)
        return try .json(run.status, status: .created, headerFields: [.location: "/runs/\(run.status.id)"])
    }
    router.get("/runs/:id") { request in try .json(run(request).status) }
    router.get("/runs/:id/events") { request in
        let log = try run(request).log.subscribe()  // the lines so far first, from the replay buffer
        return .events { events in
            for await event in log {
                switch event {
                case .line(let line): try await events.send(ServerSentEvent(event: "line", data: line))
                case .failed(let error): try await events.send(ServerSentEvent(event: "error", data: error))
                case .exited(let termination): try await events.send(ServerSentEvent(event: "exit", data: "\(termination)"))
                }
            }
        }
    }
    router.webSocket("/runs/:id/log", .inTask, accepting: { request in try run(request) }) { _, socket, run in
        let sender = Task(executorPreference: socket.loop) {
            for await event in run.log.subscribe() {
                switch event {
                case .line(let line): try await socket.send(.text(line))
                case .failed(let error): socket.close(code: .messageTooBig, reason: error)
                case .exited(let termination): socket.close(reason: "\(termination)")  // the close frame tells the exit
                }
            }
            socket.close(code: .policyViolation, reason: "fell behind the log")  // dropped (no-op after the exit)
        }
        defer { sender.cancel() }                      // a client that leaves unsubscribes at once
        for try await _ in socket.messages {}          // until either side closes
    }
    return router
}
