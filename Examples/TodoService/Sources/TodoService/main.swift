import Logging
import LoopKit
import LoopKitHTTP
import ServiceLifecycle
import TodoServiceApp

// The todo API, chat room and jobs on two loops: `swift run TodoService`, then
// `curl -d '{"title":"milk"}' localhost:8080/todos`.
let logger = Logger(label: "todo-service")
let group = try LoopGroup(threads: 2)
let router = makeRouter(store: TodoStore(), room: Broadcast(bufferLimit: 1_000), jobs: Jobs())
let server = HTTPServer(group: group, configuration: makeConfiguration(port: 8080), router: router, logger: logger)
try await ServiceGroup(services: [server], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger).run()
group.shutdown()
