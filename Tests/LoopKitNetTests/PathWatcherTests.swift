import Foundation
import LoopKit
import LoopKitTesting
@testable import LoopKitNet
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A fresh directory under the system's temporary directory, removed at the end of `body` (synchronous).
private func inTemporaryDirectory<T>(_ body: (String) throws -> T) throws -> T {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("loopkit-watch-\(UUID().uuidString)").path
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
    defer { try? FileManager.default.removeItem(atPath: path) }
    return try body(path)
}

/// Writes `text` at the end of `path` (created if missing) with one open, write, close.
private func append(_ text: String, to path: String) {
    let fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
    precondition(fd >= 0, "open \(path): errno \(errno)")
    _ = text.withCString { write(fd, $0, strlen($0)) }
    close(fd)
}

/// The kernel's limit on events queued per inotify instance (16,384 by default), or nil when unreadable.
private let inotifyQueueLimit: Int? = (try? String(contentsOfFile: "/proc/sys/fs/inotify/max_queued_events", encoding: .utf8))
    .flatMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) }

/// Path watching with inotify: what is told, coalescing per iteration, recursion, the async sequence with
/// its limit and its waiters, errors, and when events are told (R16).
@Suite("Path watching")
struct PathWatcherTests {
    @Test("Creating, writing, renaming and removing entries of a watched directory are told with their paths")
    func entriesOfAWatchedDirectory() throws {
        try inTemporaryDirectory { directory in
            let driver = try LoopDriver()
            let watcher = try PathWatcher(watching: directory, on: driver.loop)
            var told: [PathEvent] = []
            watcher.onEvents { told += $0 }
            append("a", to: directory + "/a.txt")
            _ = try driver.step()
            #expect(told == [PathEvent(path: directory + "/a.txt", changes: [.created, .modified])])
            told = []
            #expect(rename(directory + "/a.txt", directory + "/b.txt") == 0)
            _ = try driver.step()
            #expect(told == [PathEvent(path: directory + "/a.txt", changes: .movedFrom),
                             PathEvent(path: directory + "/b.txt", changes: .movedTo)])
            told = []
            #expect(chmod(directory + "/b.txt", 0o600) == 0)
            #expect(unlink(directory + "/b.txt") == 0)
            #expect(mkdir(directory + "/sub", 0o755) == 0)
            _ = try driver.step()
            #expect(told == [PathEvent(path: directory + "/b.txt", changes: [.attributesChanged, .removed]),
                             PathEvent(path: directory + "/sub", changes: .created, isDirectory: true)])
            #expect(watcher.eventsTold == 5)
            watcher.close()
        }
    }

    @Test("Several events for the same path in one iteration become one, in the place of the first")
    func eventsAreCoalescedPerIteration() throws {
        try inTemporaryDirectory { directory in
            let driver = try LoopDriver()
            let watcher = try PathWatcher(watching: directory, on: driver.loop)
            var batches: [[PathEvent]] = []
            watcher.onEvents { batches.append($0) }
            append("x", to: directory + "/first")
            for _ in 0..<50 { append("more", to: directory + "/second") }  // 50 writes: one event
            append("y", to: directory + "/first")
            _ = try driver.step()
            #expect(batches == [[PathEvent(path: directory + "/first", changes: [.created, .modified]),
                                 PathEvent(path: directory + "/second", changes: [.created, .modified])]])
            _ = try driver.step()
            #expect(batches.count == 1)  // nothing left for the next iteration
            for _ in 0..<50 { append("more", to: directory + "/second") }
            _ = try driver.step()
            #expect(batches.last == [PathEvent(path: directory + "/second", changes: .modified)])
            watcher.close()
        }
    }

    @Test("A recursive watch watches subdirectories, follows new ones and tells what they already hold")
    func recursiveWatchFollowsNewDirectories() throws {
        try inTemporaryDirectory { directory in
            #expect(mkdir(directory + "/old", 0o755) == 0)
            let driver = try LoopDriver()
            let watcher = try PathWatcher(watching: directory, recursive: true, on: driver.loop)
            #expect(watcher.watchCount == 2)
            var told: [PathEvent] = []
            watcher.onEvents { told += $0 }
            append("1", to: directory + "/old/one")
            // A tree made in one go: the watcher reaches new/deeper after its file was already made.
            try FileManager.default.createDirectory(atPath: directory + "/new/deeper", withIntermediateDirectories: true)
            append("2", to: directory + "/new/deeper/two")
            _ = try driver.step()
            #expect(told.contains(PathEvent(path: directory + "/old/one", changes: [.created, .modified])))
            #expect(told.contains(PathEvent(path: directory + "/new", changes: .created, isDirectory: true)))
            #expect(told.contains(PathEvent(path: directory + "/new/deeper", changes: .created, isDirectory: true)))
            #expect(told.contains { $0.path == directory + "/new/deeper/two" && $0.changes.contains(.created) })
            #expect(watcher.watchCount == 4)
            told = []
            append("3", to: directory + "/new/deeper/three")  // now watched directly
            _ = try driver.step()
            #expect(told == [PathEvent(path: directory + "/new/deeper/three", changes: [.created, .modified])])
            watcher.close()
        }
    }

    @Test("An event names its watched path, and the entry relative to it, under a recursive watch too")
    func eventsNameTheirWatchAndRelativePath() throws {
        try inTemporaryDirectory { directory in
            #expect(mkdir(directory + "/img", 0o755) == 0)
            let driver = try LoopDriver()
            let watcher = try PathWatcher(watching: directory, recursive: true, on: driver.loop)
            var told: [PathEvent] = []
            watcher.onEvents { told += $0 }
            append("x", to: directory + "/img/logo.png")
            append("y", to: directory + "/top.txt")
            _ = try driver.step()
            let logo = try #require(told.first { $0.path.hasSuffix("/logo.png") })
            #expect(logo.watchedPath == directory)
            #expect(logo.relativePath == "img/logo.png")
            #expect(told.first { $0.path.hasSuffix("/top.txt") }?.relativePath == "top.txt")
            watcher.close()
        }
    }

    @Test("A subdirectory renamed within a recursive watch is watched under its new path")
    func renamedSubdirectoryIsFollowed() throws {
        try inTemporaryDirectory { directory in
            #expect(mkdir(directory + "/a", 0o755) == 0)
            let driver = try LoopDriver()
            let watcher = try PathWatcher(watching: directory, recursive: true, on: driver.loop)
            var told: [PathEvent] = []
            watcher.onEvents { told += $0 }
            #expect(rename(directory + "/a", directory + "/b") == 0)
            _ = try driver.step()
            #expect(told == [PathEvent(path: directory + "/a", changes: .movedFrom, isDirectory: true),
                             PathEvent(path: directory + "/b", changes: .movedTo, isDirectory: true)])
            told = []
            append("x", to: directory + "/b/file")
            _ = try driver.step(2)
            #expect(told == [PathEvent(path: directory + "/b/file", changes: [.created, .modified])])
            #expect(watcher.watchCount == 2)
            watcher.close()
        }
    }

    @Test("A watch that is not recursive does not see inside subdirectories")
    func plainWatchStaysAtItsLevel() throws {
        try inTemporaryDirectory { directory in
            #expect(mkdir(directory + "/sub", 0o755) == 0)
            let driver = try LoopDriver()
            let watcher = try PathWatcher(watching: directory, on: driver.loop)
            var told: [PathEvent] = []
            watcher.onEvents { told += $0 }
            append("x", to: directory + "/sub/inside")
            _ = try driver.step()
            #expect(told.isEmpty)
            #expect(watcher.watchCount == 1)
            watcher.close()
        }
    }

    @Test("A watched file tells its changes; its removal is told once and ends its watch")
    func watchedFile() throws {
        try inTemporaryDirectory { directory in
            let file = directory + "/config.json"
            append("{}", to: file)
            let driver = try LoopDriver()
            let watcher = try PathWatcher(watching: file, on: driver.loop)
            var told: [PathEvent] = []
            watcher.onEvents { told += $0 }
            append("\n", to: file)
            _ = try driver.step()
            #expect(told == [PathEvent(path: file, changes: .modified)])
            told = []
            #expect(unlink(file) == 0)
            _ = try driver.step(2)
            #expect(told == [PathEvent(path: file, changes: [.attributesChanged, .removed])])
            #expect(watcher.watchedPaths.isEmpty)
            #expect(watcher.watchCount == 0)
            watcher.close()
        }
    }

    @Test("unwatch stops a path's events; paths can be added to a watcher and removed")
    func watchAndUnwatch() throws {
        try inTemporaryDirectory { directory in
            #expect(mkdir(directory + "/one", 0o755) == 0)
            #expect(mkdir(directory + "/two", 0o755) == 0)
            let driver = try LoopDriver()
            let watcher = try PathWatcher(on: driver.loop)
            try watcher.watch(directory + "/one/")
            try watcher.watch(directory + "/two")
            #expect(watcher.watchedPaths == [directory + "/one", directory + "/two"])
            var told: [String] = []
            watcher.onEvents { told += $0.map(\.path) }
            try watcher.unwatch(directory + "/one")
            append("x", to: directory + "/one/x")
            append("y", to: directory + "/two/y")
            _ = try driver.step()
            #expect(told == [directory + "/two/y"])
            #expect(throws: PathWatchError.notWatched(directory + "/one")) { try watcher.unwatch(directory + "/one") }
            watcher.close()
        }
    }

    @Test("Overlapping watches share the kernel's watch: unwatching one path keeps what the other needs")
    func overlappingWatches() throws {
        try inTemporaryDirectory { directory in
            #expect(mkdir(directory + "/inner", 0o755) == 0)
            let driver = try LoopDriver()
            let watcher = try PathWatcher(on: driver.loop)
            try watcher.watch(directory + "/inner")
            try watcher.watch(directory, recursive: true)
            #expect(watcher.watchCount == 2)  // inner is one watch, needed by both
            var told: [String] = []
            watcher.onEvents { told += $0.map(\.path) }
            try watcher.unwatch(directory + "/inner")
            append("x", to: directory + "/inner/x")  // still under the recursive watch
            _ = try driver.step()
            #expect(told == [directory + "/inner/x"])
            try watcher.watch(directory + "/inner")
            try watcher.unwatch(directory)
            #expect(watcher.watchCount == 1)
            told = []
            append("y", to: directory + "/inner/y")  // the inner watch is still there
            append("z", to: directory + "/z")  // the outer one is gone
            _ = try driver.step()
            #expect(told == [directory + "/inner/y"])
            watcher.close()
        }
    }

    @Test("The kernel's queue overflowing is told once, as an overflow event with an empty path, after the events it kept",
          .enabled(if: (inotifyQueueLimit ?? .max) <= 100_000, "the queue limit is too large to overflow in a test"))
    func queueOverflowIsTold() throws {
        let limit = try #require(inotifyQueueLimit)
        try inTemporaryDirectory { directory in
            let driver = try LoopDriver()
            let watcher = try PathWatcher(watching: directory, on: driver.loop)
            var told: [PathEvent] = []
            watcher.onEvents { told += $0 }
            // One event per directory made, more than the queue holds, with the loop not reading.
            for index in 0..<(limit + 100) { #expect(mkdir(directory + "/d\(index)", 0o755) == 0) }
            for _ in 0..<1_000 where !told.contains(where: { $0.changes.contains(.overflow) }) { _ = try driver.step() }
            let overflows = told.filter { $0.changes.contains(.overflow) }
            #expect(overflows == [PathEvent(path: "", changes: .overflow)])
            #expect(told.last == overflows.first)
            let created = told.filter { $0.changes == .created && $0.isDirectory }
            #expect(created.count >= limit - 1 && created.count < limit + 100)
            #expect(created.first?.path == directory + "/d0")
            watcher.close()
        }
    }

    @Test("Errors are typed and say what failed: a missing path, the watch limit, the instance limit, a closed watcher")
    func typedErrors() throws {
        try inTemporaryDirectory { directory in
            let driver = try LoopDriver()
            let missing = directory + "/missing"
            #expect(throws: PathWatchError.notFound(missing)) { try PathWatcher(watching: missing, on: driver.loop) }
            #expect(PathWatchError.notFound(missing).description.contains("no such file or directory (ENOENT)"))
            #expect(throws: PathWatchError.notFound(directory + "/f/x")) {
                append("", to: directory + "/f")
                _ = try PathWatcher(watching: directory + "/f/x", on: driver.loop)
            }
            // The kernel's limits are the machine's, so their mapping is checked directly.
            let limit = PathWatchError(adding: directory, code: ENOSPC)
            #expect(limit == .watchLimitReached(directory))
            #expect(limit.code == ENOSPC)
            #expect(limit.description.contains("max_user_watches"))
            #expect(PathWatchError.instanceLimitReached.description.contains("max_user_instances"))
            #expect(PathWatchError(adding: directory, code: EACCES) == .permissionDenied(directory))
            let watcher = try PathWatcher(watching: directory, on: driver.loop)
            watcher.close()
            watcher.close()  // again: nothing
            #expect(watcher.isClosed)
            #expect(throws: PathWatchError.closed) { try watcher.watch(directory) }
            #expect(throws: PathWatchError.closed) { try watcher.unwatch(directory) }
            #expect(PathWatchError.closed.description == "the path watcher is closed")
        }
    }

    @Test("A loop that shut down refuses a new watcher; shutting down closes an open one")
    func loopShutdown() throws {
        try inTemporaryDirectory { directory in
            let driver = try LoopDriver()
            let watcher = try PathWatcher(watching: directory, on: driver.loop)
            driver.loop.shutdown()
            _ = try driver.runUntilIdle()
            #expect(watcher.isClosed)
            #expect(watcher.fd == -1)  // the inotify descriptor is closed
            #expect(throws: PathWatchError.loopShutDown) { try watcher.watch(directory) }
            #expect(throws: PathWatchError.loopShutDown) { try PathWatcher(on: driver.loop) }
        }
    }

    @Test("The async sequence takes events in order, and stops reading past its buffer limit until they are taken")
    func asyncSequenceWithLimit() throws {
        try inTemporaryDirectory { directory in
            let driver = try LoopDriver()
            let loop = driver.loop
            let watcher = try PathWatcher(watching: directory, on: loop, bufferLimit: 2)
            let taken = Recorder<String>()
            let gate = Recorder<Bool>()  // opened by the test: the consumer takes events again
            let consumer = Task(executorPreference: loop) {
                var iterator = watcher.events.makeAsyncIterator()
                while taken.all.count < 8, let event = try await iterator.next() {
                    taken.record(String(event.path.dropFirst(directory.count + 1)))
                    if taken.all.count == 1 { while gate.all.isEmpty { await Task.yield() } }  // stop taking a while
                }
            }
            _ = try driver.step(2)  // the task starts and suspends in next()
            for name in ["a", "b", "c", "d"] { append(name, to: "\(directory)/\(name)") }
            _ = try driver.step(2)  // one read: four events; the task takes "a" and pauses
            #expect(taken.all == ["a"])
            #expect(!watcher.isReadWatchActive)  // three wait: above the limit, the descriptor is not read
            for name in ["e", "f", "g", "h"] { append(name, to: "\(directory)/\(name)") }
            _ = try driver.step(2)
            #expect(watcher.inbound.count - watcher.inboundHead == 3)  // still three: e…h wait in the kernel
            gate.record(true)
            for _ in 0..<20 where taken.all.count < 8 { _ = try driver.step() }
            #expect(taken.all == ["a", "b", "c", "d", "e", "f", "g", "h"])
            _ = try driver.step(2)
            consumer.cancel()
            _ = try driver.step(2)
            watcher.close()
        }
    }

    @Test("Every waiting next() is resumed exactly once: nil on close, nil on cancellation, loopShutDown on shutdown")
    func waitersAreResumedOnce() throws {
        try inTemporaryDirectory { directory in
            let driver = try LoopDriver()
            let loop = driver.loop
            let outcomes = Recorder<String>()
            func consume(_ watcher: PathWatcher, _ name: String) -> Task<Void, Never> {
                Task(executorPreference: loop) {
                    do {
                        let event = try await watcher.events.first { _ in true }
                        outcomes.record("\(name): \(event.map(\.description) ?? "nil")")
                    } catch {
                        outcomes.record("\(name): \(error)")
                    }
                }
            }
            let closed = try PathWatcher(watching: directory, on: loop)
            let cancelled = try PathWatcher(watching: directory, on: loop)
            let shutDown = try PathWatcher(watching: directory, on: loop)
            _ = consume(closed, "close")
            let cancelledTask = consume(cancelled, "cancel")
            _ = consume(shutDown, "shutdown")
            _ = try driver.step(2)  // all three suspend
            #expect(outcomes.all.isEmpty)
            closed.close()
            cancelledTask.cancel()
            _ = try driver.step(3)
            #expect(outcomes.all.sorted() == ["cancel: nil", "close: nil"])
            loop.shutdown()
            _ = try driver.runUntilIdle()
            #expect(outcomes.all.sorted() == ["cancel: nil", "close: nil",
                                              "shutdown: \(PathWatchError.loopShutDown)"])
            let anyWaits = cancelled.readWaiter.isWaiting || closed.readWaiter.isWaiting || shutDown.readWaiter.isWaiting
            #expect(!anyWaits)
        }
    }

    @Test("A handler may close its watcher: nothing more is told")
    func handlerClosesTheWatcher() throws {
        try inTemporaryDirectory { directory in
            let driver = try LoopDriver()
            let watcher = try PathWatcher(watching: directory, on: driver.loop)
            var batches = 0
            watcher.onEvents { _ in
                batches += 1
                watcher.close()
            }
            append("x", to: directory + "/x")
            _ = try driver.step()
            append("y", to: directory + "/y")
            _ = try driver.step()
            #expect(batches == 1)
            #expect(watcher.isClosed)
        }
    }

    @Test("R16: a watcher's events are told in phase 2 (work the handler queues runs in the same drain); a waiting task goes on in that drain")
    func eventsAreToldInPhaseTwo() throws {
        try inTemporaryDirectory { directory in
            let driver = try LoopDriver()
            let loop = driver.loop
            let trace = OrderTrace(loop)
            let byHandler = try PathWatcher(watching: directory, on: loop)
            let byTask = try PathWatcher(watching: directory, on: loop)
            byHandler.onEvents { events in
                trace.record("handler \(events.count)")
                try! loop.enqueue { trace.record("queued by the handler") }
            }
            Task(executorPreference: loop) {
                for try await event in byTask.events {
                    trace.record("task \(event.changes)")
                    break
                }
            }
            _ = try driver.step(2)  // the task starts and suspends in next()
            let before = loop.iteration
            append("x", to: directory + "/x")  // queued by the kernel now: the next poll finds it
            _ = try driver.step()
            let n = before + 1
            // Both watchers' callbacks run in phase 2 of n (in libevent's order); the task and the queued work
            // run after them, in the drain of n, in the order they were queued.
            #expect(trace.entries.allSatisfy { $0.iteration == n })
            #expect(trace.labels.first == "handler 1")
            #expect(Set(trace.labels.dropFirst()) == ["queued by the handler", "task [created, modified]"])
            append("y", to: directory + "/x")  // made between iterations: told in the next one, not before
            #expect(trace.entries.count == 3)
            _ = try driver.step()
            #expect(trace.description.hasSuffix("\(n + 1):handler 1 \(n + 1):queued by the handler"))
            byHandler.close()
            byTask.close()
        }
    }

    @Test("Calling a watcher off its loop's thread stops the process")
    func offTheLoopThreadTraps() async {
        await #expect(processExitsWith: .failure) {
            let loop = try! EventLoop()
            let watcher = try! PathWatcher(watching: "/tmp", on: loop)
            let done = DispatchSemaphore(value: 0)
            Thread {
                _ = watcher.isClosed
                done.signal()
            }.start()
            done.wait()
        }
    }

    @Test("A second events consumer while one waits stops the process")
    func aSecondEventsConsumerTraps() async throws {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let driver = try! LoopDriver()
            let watcher = try! PathWatcher(watching: "/tmp", on: driver.loop)
            for _ in 0..<2 { Task(executorPreference: driver.loop) { for try await _ in watcher.events {} } }
            _ = try! driver.step(2)
        }
        let message = String(decoding: try #require(result).standardErrorContent, as: UTF8.self)
        #expect(message.contains("PathWatcher.events has one consumer at a time"))
    }
}
