import Foundation
import LoopKit
import Synchronization
import Testing

/// Loops on their own threads.
@Suite("LoopGroup")
struct LoopGroupTests {
    @Test("next() hands out the loops round robin, each on its own thread")
    func roundRobin() throws {
        let group = try LoopGroup(threads: 2)
        defer { group.shutdown() }
        let first = group.next(), second = group.next(), third = group.next()
        #expect(first !== second)
        #expect(first === third)
        #expect(!first.isCurrent)
        #expect(try first.invokeAndWait { first.isCurrent && first.isRunning })
    }

    @Test("shutdown runs the work queued before it, then joins the threads")
    func shutdownRunsQueuedWork() throws {
        let group = try LoopGroup(threads: 2)
        let ran = Atomic<Int>(0)
        for _ in 0..<1_000 { try group.next().enqueue { ran.add(1, ordering: .relaxed) } }
        group.shutdown()
        #expect(ran.load(ordering: .relaxed) == 1_000)
        #expect(group.loops.allSatisfy { !$0.isAcceptingWork })
        group.shutdown()
    }

    @Test("shutdown from one of the group's own loops shuts it down without waiting for itself")
    func shutdownFromOwnLoop() throws {
        let group = try LoopGroup(threads: 2)
        let loop = group.loops[0]
        try loop.invokeAndWait { group.shutdown() }
        #expect(group.loops.allSatisfy { !$0.isAcceptingWork })
    }

    @Test("a group needs at least one thread")
    func badSize() {
        #expect(throws: EventLoopError.invalidArgument("a LoopGroup needs at least one thread, got 0")) {
            try LoopGroup(threads: 0)
        }
    }

    @Test("the group's threads carry its name, cut to Linux's 15 bytes with the index kept")
    func threadsAreNamed() throws {
        let group = try LoopGroup(threads: 2, name: "thread-name-test-group")
        defer { group.shutdown() }
        // Threads of other tests come and go while the folder is read: a task gone by the time its
        // name is read has no name to report (its error is the expected ENOENT, not a failure here).
        let names = try FileManager.default.contentsOfDirectory(atPath: "/proc/self/task").compactMap { task in
            FileManager.default.contents(atPath: "/proc/self/task/\(task)/comm").map {
                String(decoding: $0, as: UTF8.self).trimmingCharacters(in: .newlines)
            }
        }
        #expect(names.contains("thread-name-t-0"))
        #expect(names.contains("thread-name-t-1"))
    }
}
