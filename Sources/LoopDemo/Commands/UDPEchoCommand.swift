import ArgumentParser
import LoopDemoKit

/// `LoopDemo udp-echo`: a UDP echo server on LoopKitNet, one loop.
struct UDPEchoCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "udp-echo",
        abstract: "A UDP echo server on LoopKitNet (recvmmsg/sendmmsg on one loop).",
        discussion: """
            Prints exactly one line, `listening on HOST:PORT (udp)`, once it receives. Every datagram is sent \
            back to its sender. SIGINT or SIGTERM closes the socket and exits 0.
            """
    )

    @Option(help: "The port to bind; 0 picks a free one.")
    var port = 0

    @Option(help: "The numeric address to bind (IPv4 or IPv6).")
    var host = "127.0.0.1"

    @Option(help: "The most datagrams one recvmmsg takes (1...1024).")
    var batch = 64

    func validate() throws {
        guard (0...65_535).contains(port) else { throw ValidationError("--port must be in 0...65535") }
        guard (1...1024).contains(batch) else { throw ValidationError("--batch must be in 1...1024") }
    }

    func run() throws {
        try UDPEchoServer.run(host: host, port: port, batchSize: batch)
    }
}
