import Foundation

/// Memory per idle connection: a server's resident set growth while it holds 10,000 open, idle
/// connections, divided by 10,000 (2,000 with `--quick`).
///
/// Each server (LoopKit, then SwiftNIO) runs in a fresh child process of its own
/// (``IdleConnectionServer``), so neither inherits heap the other freed and each process holds only
/// about 10,000 descriptors: the server's sockets in the child, the clients' here. (In one process both
/// ends need 20,000, which a hard limit of 20,000 cannot give.) The child reads its resident set size
/// before it accepts and once it has accepted every connection; this process opens the plain client
/// sockets (``LoopbackClient``), reads the child's figure, closes the clients and reaps the child. One
/// measurement per server (no median: 10,000 sockets each).
///
/// A second row does the same with HTTP servers holding idle keep-alive connections: LoopKitHTTP's
/// `HTTPServer` and NIOHTTP1's server pipeline, each on one loop. There the parent sends one keep-alive
/// `GET /hello` on each connection as it opens it and reads the whole response before opening the next
/// (``LoopbackClient/requestHello(on:timeoutSeconds:)``); the child measures once it has accepted every
/// connection and answered every request.
enum IdleConnectionMemory {
    static let nioPeer = "NIO (one loop, empty pipeline)"
    static let nioHTTPPeer = "NIOHTTP1 (one loop)"

    static func run(_ options: Options) throws -> [Row] {
        let limit = DescriptorLimit.raiseToHard()
        let wanted = options.count(10_000, quick: 2_000)
        // The clients' descriptors here, the server's in the child (which raises its limit to the same
        // hard limit), with room for each process's own.
        let count = min(wanted, limit.to - 200)

        let loopKit = measure(.loopKit, count: count)
        let nio = options.peers ? measure(.nio, count: count) : nil
        let http = measure(.http, count: count)
        let nioHTTP = options.peers ? measure(.nioHTTP, count: count) : nil

        var note = "RSS growth (/proc/self/statm) / \(count) of a fresh child process per server (this executable, "
            + "\(IdleConnectionServer.subcommand)) running one server loop that holds \(count) idle connections; "
            + "the clients are plain sockets in the benchmark process, so neither process holds more than about "
            + "\(count) descriptors. RSS counts the server's userspace memory (heap, LoopKit or NIO structures, "
            + "allocator overhead, touched thread stacks); the sockets' kernel memory is not in it. "
            + "\(loopKit.description(as: "LoopKit"))"
        if let nio { note += " \(nio.description(as: "NIO"))" }
        note += " RLIMIT_NOFILE soft limit set to the hard limit with setrlimit in the benchmark process (\(limit)) "
            + "and again in each child (\(loopKit.limit); a child inherits the benchmark process's limits)."
        if count < wanted { note += " Only \(count) connections fit (wanted \(wanted))." }

        var httpNote = "RSS growth (/proc/self/statm) / \(count) of a fresh child process per server (this executable, "
            + "\(IdleConnectionServer.subcommand) http|nio-http): LoopKitHTTP's HTTPServer (LoopGroup of one thread, "
            + "backlog 4096, idle timeout 120 s, logger silenced) or NIO with "
            + "configureHTTPServerPipeline and a /hello handler (one loop, backlog 4096). The benchmark process opens "
            + "\(count) plain client sockets one after another, sends one keep-alive GET /hello on each and reads the whole "
            + "response, then leaves it open and idle; the child measures before its first accept and once it has "
            + "accepted \(count) connections and answered \(count) requests, after 100 ms to settle. So the figure is an "
            + "idle keep-alive connection that has served one request (its buffers as the server keeps them between "
            + "requests), not a connection that never sent anything. RSS counts the server's userspace memory (heap, "
            + "read/write buffers, parser and timer state, allocator overhead, touched thread stacks); the sockets' "
            + "kernel memory is not in it. \(http.description(as: "LoopKitHTTP"))"
        if let nioHTTP { httpNote += " \(nioHTTP.description(as: "NIOHTTP1"))" }
        httpNote += " Descriptor limits as in the row above (child: \(http.limit))."
        if count < wanted { httpNote += " Only \(count) connections fit (wanted \(wanted))." }

        return [
            Row(scenario: "memory per idle connection (\(count) open)", unit: .kibibytes,
                loopKit: loopKit.figure, peers: nio.map { [(name: nioPeer, figure: $0.figure)] } ?? [],
                goal: .atMostKiBAndNoMoreThan(8, peer: nioPeer), note: note),
            Row(scenario: "memory per idle HTTP keep-alive connection (\(count) open)", unit: .kibibytes,
                loopKit: http.figure, peers: nioHTTP.map { [(name: nioHTTPPeer, figure: $0.figure)] } ?? [],
                goal: .atMostKiBAndNoMoreThan(8, peer: nioHTTPPeer), note: httpNote),
        ]
    }

    /// One server's figure and what the reader of the note should know about its child.
    private struct Measurement {
        var perConnectionKiB: Double
        var residentBeforeKiB: Int
        var residentAfterKiB: Int
        /// The child's descriptor limits.
        var limit: DescriptorLimit.Change
        /// Set when the child did not exit cleanly once its clients closed.
        var exitProblem: String?

        var figure: Figure { Figure(median: perConnectionKiB, samples: [perConnectionKiB]) }

        /// A sentence for the row's note.
        func description(as name: String) -> String {
            "\(name) child RSS \(residentBeforeKiB) → \(residentAfterKiB) KiB." + (exitProblem.map { " \($0)" } ?? "")
        }
    }

    /// Starts a child running `kind`'s server, connects `count` clients to it, reads its figure, closes
    /// the clients and reaps the child. Stops the benchmark with a message if the child fails.
    private static func measure(_ kind: IdleConnectionServer.Kind, count: Int) -> Measurement {
        let child: ChildProcess
        do {
            child = try ChildProcess(arguments: [IdleConnectionServer.subcommand, kind.rawValue, String(count)])
        } catch {
            stop("idlemem: could not start the \(kind.rawValue) server's child process: \(error)")
        }
        /// Kills the child and stops the benchmark, saying what the child said (its `failed` line) or, when
        /// it said nothing, `problem`.
        func fail(_ problem: String, line: String?) -> Never {
            let said = line.map { $0.hasPrefix("failed ") ? String($0.dropFirst(7)) : "wrote \"\($0)\"" }
            child.kill()
            stop("idlemem: \(kind.rawValue) server child (pid \(child.id)): \(said ?? problem); child \(child.state)")
        }

        let listening = child.readLine(timeout: .seconds(30))
        let words = listening?.split(separator: " ").compactMap { Int($0) } ?? []
        guard listening?.hasPrefix("listening ") == true, words.count == 4 else {
            fail("did not report its port within 30 s", line: listening)
        }
        let limit = DescriptorLimit.Change(from: words[1], to: words[2], hard: words[3])

        var clients: [Int32] = []
        clients.reserveCapacity(count)
        for _ in 0..<count {
            let fd: Int32
            switch LoopbackClient.tryConnect(port: words[0]) {
            case .success(let connected): fd = connected
            case .failure(let problem):
                for fd in clients { close(fd) }
                // A refused connect usually means the child has stopped listening: say what it said.
                let said = child.readLine(timeout: .seconds(1)).map { "; the child wrote \"\($0)\"" } ?? ""
                fail("connection \(clients.count + 1) of \(count): \(problem.message)\(said)", line: nil)
            }
            clients.append(fd)
            // An HTTP server answers one request on each connection before the next opens.
            if kind.servesHTTP, let problem = LoopbackClient.requestHello(on: fd, timeoutSeconds: 10) {
                for fd in clients { close(fd) }
                fail("connection \(clients.count) of \(count): \(problem)", line: nil)
            }
        }
        let measured = child.readLine(timeout: .seconds(45))
        let figures = measured?.split(separator: " ").dropFirst().compactMap { Double($0) } ?? []
        guard measured?.hasPrefix("measured ") == true, figures.count == 3 else {
            for fd in clients { close(fd) }
            fail("did not report its figure within 45 s", line: measured)
        }

        for fd in clients { close(fd) }
        child.closeInput()
        let exited = child.waitForExit(timeout: .seconds(15))
        return Measurement(
            perConnectionKiB: figures[0], residentBeforeKiB: Int(figures[1]), residentAfterKiB: Int(figures[2]),
            limit: limit,
            exitProblem: child.succeeded ? nil
                : "Once its clients closed, the child \(exited ? child.state : "did not exit within 15 s (killed)").")
    }

    /// Stops the benchmark with a message (as ``check(_:_:)`` does).
    private static func stop(_ message: String) -> Never {
        FileHandle.standardError.write(Data("benchmark check failed: \(message)\n".utf8))
        exit(1)
    }
}
