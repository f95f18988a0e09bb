import Synchronization

/// Loops that each run on a thread of their own, for servers and background workers.
///
/// ```swift
/// let group = try LoopGroup(threads: 2)
/// try group.next().enqueue { … }
/// group.shutdown()
/// ```
public final class LoopGroup: Sendable {
    /// The group's loops, one per thread.
    public let loops: [EventLoop]
    private let threads: [SpawnedThread]
    private let cursor = Atomic<Int>(0)

    /// Starts `threads` threads, each creating and running its own loop.
    ///
    /// - Parameters:
    ///   - threads: How many loops (and threads); at least 1.
    ///   - name: A prefix for the threads' names, shown by debuggers and `top -H`: thread *i* is named
    ///     `name-i`, with `name` cut so the whole fits Linux's 15 bytes.
    /// - Throws: ``EventLoopError/invalidArgument(_:)`` for fewer than one thread; the error of a loop
    ///   that could not be created; ``EventLoopError/system(_:_:)`` when a thread cannot start.
    ///
    /// Safe from any thread.
    public init(threads: Int, name: String = "loopkit") throws(EventLoopError) {
        guard threads >= 1 else { throw .invalidArgument("a LoopGroup needs at least one thread, got \(threads)") }
        var loops: [EventLoop] = []
        var spawned: [SpawnedThread] = []
        for index in 0..<threads {
            let handoff = Rendezvous<Result<EventLoop, EventLoopError>>()
            let thread: SpawnedThread
            do throws(EventLoopError) {
                thread = try SpawnedThread(name: Self.threadName(name, index)) {
                    let loop: EventLoop
                    do throws(EventLoopError) {
                        loop = try EventLoop()
                    } catch {
                        handoff.fulfil(.failure(error))
                        return
                    }
                    handoff.fulfil(.success(loop))
                    while loop.isAcceptingWork {
                        do { try loop.run() } catch { break }
                    }
                    loop.reachCheckpoint(.runEnded)
                }
            } catch {
                Self.stop(loops, spawned)
                throw error
            }
            spawned.append(thread)
            switch handoff.wait() {
            case .success(let loop): loops.append(loop)
            case .failure(let error):
                Self.stop(loops, spawned)
                throw error
            }
        }
        self.loops = loops
        self.threads = spawned
    }

    /// `prefix-index`, the prefix cut (at a character boundary) so the name fits in 15 bytes.
    static func threadName(_ prefix: String, _ index: Int) -> String {
        let suffix = "-\(index)"
        var bytes = suffix.utf8.count
        let kept = prefix.prefix { character in
            bytes += character.utf8.count
            return bytes <= 15
        }
        return kept + suffix
    }

    /// The next loop, round robin. Safe from any thread.
    public func next() -> EventLoop {
        let index = cursor.wrappingAdd(1, ordering: .relaxed).oldValue
        return loops[index % loops.count]
    }

    /// Shuts every loop down (each runs the work queued before, then stops) and waits for the threads.
    ///
    /// Called from one of the group's own loops (or when the group's last reference goes away there), it
    /// waits for the other threads only; the calling loop finishes its shutdown when its callback returns.
    /// Calling it again does nothing. Safe from any thread.
    public func shutdown() {
        Self.stop(loops, threads)
    }

    private static func stop(_ loops: [EventLoop], _ threads: [SpawnedThread]) {
        for loop in loops { loop.shutdown() }
        for (loop, thread) in zip(loops, threads) {
            if loop.isCurrent { thread.detach() } else { thread.join() }
        }
    }

    deinit { Self.stop(loops, threads) }
}
