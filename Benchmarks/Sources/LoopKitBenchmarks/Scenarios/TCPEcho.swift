import Foundation
import LoopKit
import LoopKitNet
import NIOCore
import NIOPosix

/// TCP echo: 64 client connections, 4 KiB messages, one server loop on its own thread.
///
/// LoopKit: `LoopGroup(threads: 1)` with LoopKitNet's lean path (`onRead` + `write(copying:)`, one
/// `writev` per read callback), as `LoopDemo echo` serves.
/// SwiftNIO: one `MultiThreadedEventLoopGroup` loop, a `ChannelInboundHandler` that writes back what it
/// reads and flushes in `channelReadComplete` (NIO's own echo example).
/// The client is the same for both: ``LoopbackClient/echo(port:connections:roundTrips:size:)`` on the
/// benchmark's thread, 64 non-blocking sockets under one `poll`.
enum TCPEcho {
    static let nioPeer = "NIO echo handler"
    static let connections = 64
    static let size = 4096

    static func run(_ options: Options) throws -> [Row] {
        let n = options.count(128_000, quick: 6_400)
        var comparison = Comparison(options)
        let p99 = Percentiles()

        let group = try LoopGroup(threads: 1, name: "bench-echo")
        let listener = try TCPListener.bind(host: "127.0.0.1", port: 0, on: group, onAccept: echo)
        let loopKitPort = listener.localAddress.port
        comparison.loopKit("LoopKit", operations: n) {
            let result = LoopbackClient.echo(port: loopKitPort, connections: connections, roundTrips: n, size: size)
            p99.record("LoopKit", LoopbackClient.percentile99(result.roundTrips))
            return result.nanoseconds
        }

        let nioGroup = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let server = try ServerBootstrap(group: nioGroup)
            .serverChannelOption(.backlog, value: 4096)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(NIOEchoHandler()) }
            }
            .bind(host: "127.0.0.1", port: 0).wait()
        let nioPort = server.localAddress!.port!
        comparison.peer(nioPeer, operations: n) {
            let result = LoopbackClient.echo(port: nioPort, connections: connections, roundTrips: n, size: size)
            p99.record(nioPeer, LoopbackClient.percentile99(result.roundTrips))
            return result.nanoseconds
        }

        let figures = try comparison.run()
        listener.close()
        try server.close().wait()
        try nioGroup.syncShutdownGracefully()
        // Connections already ended (the client closes its sockets after each run): the loop can go.
        group.shutdown()

        func megabytesPerSecond(_ figure: Figure) -> String {
            String(format: "%.0f", Double(size) / figure.median * 1e9 / 1e6)
        }
        let throughputNote = "MB/s (bytes echoed / time): LoopKit \(megabytesPerSecond(figures["LoopKit"]))"
            + (options.peers ? ", NIO \(megabytesPerSecond(figures[nioPeer]))" : "")
        return [
            Row(scenario: "TCP echo 4 KiB × 64 connections (time per message)", unit: .microseconds,
                loopKit: figures["LoopKit"], peers: figures.peers(nioPeer), goal: .noSlowerThan(peer: nioPeer),
                note: "\(throughputNote); goal ≥ NIO on MB/s. \(n) round trips per run over \(connections) "
                    + "connections to one server loop on its own thread; the client (same code for both servers) "
                    + "runs 64 non-blocking sockets under one poll() on the benchmark's thread."),
            Row(scenario: "TCP echo 4 KiB × 64 connections (p99 round trip)", unit: .microseconds,
                loopKit: p99.figure("LoopKit"), peers: options.peers ? [(name: nioPeer, figure: p99.figure(nioPeer))] : [],
                goal: .none,
                note: "median over the runs of each run's 99th-percentile round trip (64 in flight at once)."),
        ]
    }

    /// The echo handler: everything read is written back at once. Call on the connection's loop's thread.
    @Sendable static func echo(_ connection: Connection) {
        connection.onRead { bytes in
            do {
                try connection.write(copying: bytes)
            } catch {
                return bytes.count  // closing: drop the bytes
            }
            return bytes.count
        }
    }
}

/// Per-run figures a ``Comparison`` body records besides its elapsed time (here each run's p99).
/// Only the benchmark's thread touches it (the bodies run there, one at a time).
final class Percentiles {
    private var samples: [String: [Double]] = [:]

    func record(_ name: String, _ value: Double) { samples[name, default: []].append(value) }

    /// The timed runs' values for `name` (the warm-up's first value dropped), as a figure.
    func figure(_ name: String) -> Figure {
        let values = Array((samples[name] ?? []).dropFirst())
        guard !values.isEmpty else { return Figure(median: .nan, samples: []) }
        return Figure(median: median(values), samples: values)
    }
}

/// SwiftNIO's echo: writes back each read, flushes when the read burst ends.
final class NIOEchoHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        context.write(data, promise: nil)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        context.flush()
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        context.close(promise: nil)
    }
}
