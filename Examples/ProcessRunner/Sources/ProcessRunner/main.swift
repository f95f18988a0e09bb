import Logging
import LoopKit
import LoopKitHTTP
import ProcessRunnerApp
import ServiceLifecycle

// Child processes on two loops, their output streamed: `swift run ProcessRunner`, then
// `curl -d '{"command":"uptime"}' localhost:8080/runs` and `curl -N localhost:8080/runs/1/events`.
let logger = Logger(label: "process-runner")
let group = try LoopGroup(threads: 2)
let runs = Runs(commands: [
    "uptime": Command("/usr/bin/uptime"),
    "disk": Command("/bin/df", "-h"),
    "count": Command("/bin/sh", "-c", "for i in 1 2 3 4 5; do echo $i; sleep 1; done"),
])
let server = HTTPServer(group: group, configuration: makeConfiguration(port: 8080), router: makeRouter(runs: runs), logger: logger)
try await ServiceGroup(services: [server], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger).run()
group.shutdown()
