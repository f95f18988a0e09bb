import ArgumentParser
import LoopDemoKit

/// `LoopDemo echo`: a TCP echo server on LoopKitNet.
struct EchoCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "echo",
        abstract: "A TCP echo server on LoopKitNet.",
        discussion: """
            Prints exactly one line, `listening on HOST:PORT`, once it accepts connections. SIGINT or SIGTERM \
            stops accepting, closes the connections gracefully and exits 0.
            """
    )

    @Option(help: "The port to listen on; 0 picks a free one.")
    var port = 0

    @Option(help: "How many loops (threads) accept and serve connections (SO_REUSEPORT).")
    var threads = 1

    @Option(help: "The numeric address to bind.")
    var host = "127.0.0.1"

    func validate() throws {
        guard (0...65_535).contains(port) else { throw ValidationError("--port must be in 0...65535") }
        guard threads >= 1, threads <= 256 else { throw ValidationError("--threads must be in 1...256") }
    }

    func run() throws {
        try EchoServer.run(host: host, port: port, threads: threads)
    }
}
