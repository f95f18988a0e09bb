import Foundation
import LoopKit
import LoopKitNet
import NIOCore
import NIOPosix
import Synchronization

/// The server half of ``IdleConnectionMemory``: one server in a fresh process of its own, measuring its
/// own resident set while it holds idle connections. The benchmark starts it as
/// `LoopKitBenchmarks --idlemem-server loopkit|nio|http|nio-http COUNT` (a hidden sub-command;
/// ``ChildProcess``).
///
/// The child raises its descriptor limit to the hard limit (`setrlimit`), starts one server loop on
/// 127.0.0.1, port 0 (LoopKit: a one-thread `LoopGroup` and a `TCPListener` doing nothing with its
/// connections; SwiftNIO: a one-thread `MultiThreadedEventLoopGroup` and a `ServerBootstrap` with an
/// empty pipeline; backlog 4096 for both; the HTTP servers `http` and `nio-http` are in
/// ``startLoopKitHTTP()`` and ``startNIOHTTP()``) and reads its resident set size (`/proc/self/statm`).
/// Then it tells the parent its port, waits until it has accepted COUNT connections (an HTTP server: and
/// answered COUNT requests, one per connection; 30 s at most), lets them settle for 100 ms and reads its
/// resident set size again. The parent holds the clients.
///
/// It answers on stdout, one line each:
/// - `listening PORT LIMIT_BEFORE LIMIT_AFTER LIMIT_HARD` once the server is up (the descriptor limits);
/// - `measured KIB_PER_CONNECTION RSS_BEFORE_KIB RSS_AFTER_KIB` once COUNT connections are open;
/// - `failed MESSAGE` instead of either, and it exits with status 1.
///
/// After `measured` it waits until its stdin closes (the parent has closed its clients), shuts the
/// server down and exits. Its stdin closing earlier (the parent gone) makes it exit at once.
struct IdleConnectionServer {
    /// The sub-command that selects this role.
    static let subcommand = "--idlemem-server"

    /// The server the child runs.
    enum Kind: String {
        case loopKit = "loopkit"
        case nio
        /// LoopKitHTTP's `HTTPServer` (``startLoopKitHTTP()``).
        case http
        /// SwiftNIO with NIOHTTP1's server pipeline (``startNIOHTTP()``).
        case nioHTTP = "nio-http"

        /// Whether the parent sends one request on each connection and reads its response.
        var servesHTTP: Bool { self == .http || self == .nioHTTP }
    }

    var kind: Kind
    /// The connections to wait for.
    var count: Int

    /// The child role `arguments` ask for (the process's command line), or nil when they do not start
    /// with ``subcommand``. Stops the process with a message when the sub-command's arguments are wrong.
    init?(arguments: [String]) {
        guard arguments.count > 1, arguments[1] == Self.subcommand else { return nil }
        guard arguments.count == 4, let kind = Kind(rawValue: arguments[2]), let count = Int(arguments[3]), count > 0 else {
            Self.fail("usage: \(Self.subcommand) loopkit|nio|http|nio-http COUNT")
        }
        self.kind = kind
        self.count = count
    }

    /// Runs the child role to its end and exits the process.
    func run() -> Never {
        let limit = DescriptorLimit.raiseToHard()
        let inputClosed = DispatchSemaphore(value: 0)
        spawnThread {
            var byte: UInt8 = 0
            while true {
                let n = read(STDIN_FILENO, &byte, 1)
                if n == 0 || (n < 0 && errno != EINTR) { break }
            }
            inputClosed.signal()
        }

        let server: Server
        do {
            switch kind {
            case .loopKit: server = try Self.startLoopKit()
            case .nio: server = try Self.startNIO()
            case .http: server = try Self.startLoopKitHTTP()
            case .nioHTTP: server = try Self.startNIOHTTP()
            }
        } catch {
            Self.fail("\(kind.rawValue) server did not start: \(error)")
        }
        let before = MemoryIterations.residentKiB()
        Self.say("listening \(server.port) \(limit.from) \(limit.to) \(limit.hard)")

        let deadline = ContinuousClock.now + .seconds(30)
        while server.served() < count || server.accepted() < count {
            if inputClosed.wait(timeout: .now()) == .success { exit(1) }  // the parent is gone
            if ContinuousClock.now >= deadline {
                Self.fail("the \(kind.rawValue) server accepted \(server.accepted()) of \(count) connections "
                    + "and answered \(server.served()) requests in 30 s")
            }
            usleep(1_000)
        }
        usleep(100_000)  // let the server finish setting up the last connections it accepted
        let after = MemoryIterations.residentKiB()
        Self.say("measured \(Double(after - before) / Double(count)) \(before) \(after)")

        inputClosed.wait()
        server.shutDown()
        exit(0)
    }

    /// A running server, whichever it is.
    struct Server {
        var port: Int
        /// The connections it has accepted so far.
        var accepted: () -> Int
        /// The requests it has answered so far (an HTTP server), or `Int.max` (the others: nothing to wait for).
        var served: () -> Int = { Int.max }
        /// Closes the listening socket and every connection, stops the loop; returns when done.
        var shutDown: () -> Void
    }

    private static func startLoopKit() throws -> Server {
        let group = try LoopGroup(threads: 1, name: "idlemem-server")
        var options = ListenerOptions()
        options.backlog = 4096
        let listener = try TCPListener.bind(host: "127.0.0.1", port: 0, on: group, options: options, onAccept: { _ in })
        return Server(port: listener.localAddress.port, accepted: { listener.connectionCount }) {
            let ended = DispatchSemaphore(value: 0)
            Task.detached {
                await listener.shutdown(deadline: .seconds(5))
                ended.signal()
            }
            ended.wait()
            group.shutdown()
        }
    }

    private static func startNIO() throws -> Server {
        let accepted = Counter()
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let channel = try ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 4096)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                accepted.value.add(1, ordering: .relaxed)
                return channel.eventLoop.makeSucceededVoidFuture()
            }
            .bind(host: "127.0.0.1", port: 0).wait()
        return Server(port: channel.localAddress!.port!, accepted: { accepted.value.load(ordering: .relaxed) }) {
            try? channel.close().wait()
            try? group.syncShutdownGracefully()
        }
    }

    /// A server's accept or request count, shared between its loop and the main thread.
    final class Counter: Sendable {
        let value = Atomic<Int>(0)
    }

    /// Writes `line` to stdout at once (no buffering: the parent is waiting for it).
    private static func say(_ line: String) {
        let bytes = Array((line + "\n").utf8)
        _ = bytes.withUnsafeBytes { write(STDOUT_FILENO, $0.baseAddress!, $0.count) }
    }

    /// Tells the parent what went wrong and exits with status 1.
    static func fail(_ message: String) -> Never {
        say("failed \(message)")
        exit(1)
    }
}
