import Foundation
import LoopKit
import LoopKitNet
import NIOCore
import NIOPosix
import Synchronization

/// Memory per idle connection: RSS growth while a server holds 10,000 open, idle connections.
///
/// For each server in turn (LoopKit, then SwiftNIO; one loop on its own thread each): RSS after the
/// server is up, 10,000 plain client sockets connected from this process, wait until the server has
/// accepted all of them, RSS again; (after − before) / count. The client sockets' kernel memory is not
/// RSS; their userspace cost is one fd each. One measurement per server (no median: 10,000 sockets).
enum IdleConnectionMemory {
    static let nioPeer = "NIO (one loop, empty pipeline)"

    static func run(_ options: Options) throws -> [Row] {
        let (count, limitNote) = raiseFileLimit(wanted: options.count(10_000, quick: 2_000))

        let baselineFiles = openFileCount()
        let group = try LoopGroup(threads: 1, name: "bench-idlemem")
        var listenerOptions = ListenerOptions()
        listenerOptions.backlog = 4096
        let listener = try TCPListener.bind(host: "127.0.0.1", port: 0, on: group, options: listenerOptions, onAccept: { _ in })
        let loopKit = measure(count: count, port: listener.localAddress.port) { listener.connectionCount }
        let ended = DispatchSemaphore(value: 0)
        Task.detached {
            await listener.shutdown(deadline: .seconds(5))
            ended.signal()
        }
        ended.wait()
        // The next server needs the descriptors back: wait (the loop still running) until LoopKit's are
        // closed, then shut the group down.
        let filesDeadline = monotonicNanoseconds() + 10_000_000_000
        while openFileCount() > baselineFiles + 50, monotonicNanoseconds() < filesDeadline { usleep(10_000) }
        let leftOpen = openFileCount() - baselineFiles
        group.shutdown()

        var peers: [(name: String, figure: Figure)] = []
        if options.peers {
            let accepted = Atomic<Int>(0)
            let nioGroup = MultiThreadedEventLoopGroup(numberOfThreads: 1)
            let server = try ServerBootstrap(group: nioGroup)
                .serverChannelOption(.backlog, value: 4096)
                .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                .childChannelInitializer { channel in
                    accepted.add(1, ordering: .relaxed)
                    return channel.eventLoop.makeSucceededVoidFuture()
                }
                .bind(host: "127.0.0.1", port: 0).wait()
            let nio = measure(count: count, port: server.localAddress!.port!) { accepted.load(ordering: .relaxed) }
            try server.close().wait()
            try nioGroup.syncShutdownGracefully()
            peers = [(name: nioPeer, figure: nio)]
        }

        return [
            Row(scenario: "memory per idle connection (\(count) open)", unit: .kibibytes, loopKit: loopKit,
                peers: peers, goal: .atMostKiBAndNoMoreThan(8, peer: nioPeer),
                note: "RSS growth (/proc/self/statm) / \(count) while one server loop holds \(count) idle connections "
                    + "from plain client sockets in this process (their kernel memory is not RSS); LoopKit measured "
                    + "first (NIO may reuse heap LoopKit freed). \(limitNote) "
                    + "\(leftOpen) descriptors were still open up to 10 s after the LoopKit listener's shutdown (clients closed, loop running)."),
        ]
    }

    /// Connects `count` clients, waits until `accepted()` reaches `count`, returns the RSS growth per
    /// connection in KiB; closes the clients and waits until the server has seen them go.
    private static func measure(count: Int, port: Int, accepted: () -> Int) -> Figure {
        let before = MemoryIterations.residentKiB()
        let fds = (0..<count).map { _ in LoopbackClient.connect(port: port) }
        let deadline = monotonicNanoseconds() + 30_000_000_000
        while accepted() < count {
            check(monotonicNanoseconds() < deadline, "idlemem: the server accepted \(accepted()) of \(count) in 30 s")
            usleep(1_000)
        }
        usleep(100_000)  // let the server finish setting up the last connections it accepted
        let after = MemoryIterations.residentKiB()
        for fd in fds { close(fd) }
        let perConnection = Double(after - before) / Double(count)
        return Figure(median: perConnection, samples: [perConnection])
    }

    /// The number of descriptors this process has open (entries of `/proc/self/fd`).
    private static func openFileCount() -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? 0
    }

    /// Raises `RLIMIT_NOFILE`'s soft limit (to the hard limit, at least 25,000 if allowed); returns how
    /// many connections fit and a sentence for the row's note.
    private static func raiseFileLimit(wanted: Int) -> (count: Int, note: String) {
        var limit = rlimit()
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        let original = limit.rlim_cur
        limit.rlim_cur = limit.rlim_max == rlim_t.max ? max(limit.rlim_cur, 25_000) : limit.rlim_max
        if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) != 0 {
            getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        }
        // Two fds per connection (client and server), plus room for server descriptors not yet released
        // when the next server starts (seen with LoopKit: see the row's note).
        let fit = (Int(clamping: limit.rlim_cur) - 1_000) / 3
        let count = min(wanted, fit)
        var note = "RLIMIT_NOFILE soft limit raised from \(original) to \(limit.rlim_cur) (setrlimit, hard \(limit.rlim_max))."
        if count < wanted { note += " Only \(count) connections fit (wanted \(wanted))." }
        return (count, note)
    }
}
