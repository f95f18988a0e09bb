import ArgumentParser
import LoopDemoKit
import LoopKit
import LoopKitHTTP
import LoopKitNet
import Logging
import ServiceLifecycle
#if canImport(Glibc)
import Glibc
#endif

/// `LoopDemo serve`: the HTTP server with the demo's routes, until SIGINT or SIGTERM.
struct ServeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve /hello, /echo, /stream?bytes=N and /work?items=N over HTTP/1.1 (SIGINT/SIGTERM stop it gracefully)."
    )

    @Option(help: "The numeric IPv4 or IPv6 address to listen on.")
    var host = "127.0.0.1"

    @Option(help: "The port; 0 picks a free one.")
    var port = 0

    @Option(help: "Loops (threads) serving connections.")
    var threads = 1

    @Option(name: .customLong("max-body"), help: "The largest request body, in bytes.")
    var maxBody = 1024 * 1024

    @Option(name: .customLong("log-level"), help: "trace, debug, info (an access line per request), notice, warning, error, critical.")
    var logLevel = "info"

    @Option(name: .customLong("tls-cert"), help: "Serve HTTPS with this PEM certificate chain (with --tls-key).")
    var tlsCertificate: String?

    @Option(name: .customLong("tls-key"), help: "The PEM private key of --tls-cert.")
    var tlsKey: String?

    func validate() throws {
        guard (tlsCertificate == nil) == (tlsKey == nil) else { throw ValidationError("--tls-cert and --tls-key go together") }
        guard (0...65535).contains(port) else { throw ValidationError("--port must be in 0...65535") }
        guard threads >= 1 else { throw ValidationError("--threads must be at least 1") }
        guard maxBody >= 0 else { throw ValidationError("--max-body must not be negative") }
        guard Logger.Level(rawValue: logLevel) != nil else { throw ValidationError("unknown --log-level \(logLevel)") }
    }

    func run() throws {
        // Logs go to standard error: standard output carries only the "listening on" line.
        // Batched: one access line per request costs a format and an append, not a write and a flush each.
        let sink = BatchedLogHandler.Sink()
        LoggingSystem.bootstrap { label in BatchedLogHandler(label: label, sink: sink) }
        defer { sink.flush() }
        var logger = Logger(label: "loopdemo.serve")
        logger.logLevel = Logger.Level(rawValue: logLevel)!
        let group = try LoopGroup(threads: threads, name: "serve")
        var configuration = HTTPServer.Configuration(host: host, port: port)
        configuration.maxBodySize = maxBody
        if let tlsCertificate, let tlsKey {
            configuration.tls = try TLSContext(.server(certificateChain: .file(tlsCertificate), privateKey: .file(tlsKey)))
        }
        let server = HTTPServer(group: group, configuration: configuration,
                                router: DemoRoutes.router(work: .calibrated(nanosecondsPerItem: 1_000)), logger: logger)
        let port = try server.start()
        print("listening on \(host):\(port)")
        fflush(nil)  // every output stream: the line must reach a pipe at once

        // The main thread runs a loop of its own until the service group has returned.
        let main = try EventLoop()
        let services = ServiceGroup(services: [server], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
        Task {
            do {
                try await services.run()
            } catch {
                logger.error("server failed", metadata: ["error": "\(error)"])
            }
            main.stop()
        }
        try main.run()
        group.shutdown()
    }
}
