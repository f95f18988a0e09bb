import DequeModule
import Synchronization

/// Values sent once and received by every subscriber: a chat room's messages, a build's log lines, a feed
/// of changed files. Each subscriber gets, in order, every value sent after it subscribed (and, with a
/// replay buffer, the last few sent before), from a queue of its own bounded to `bufferLimit`; what a slow
/// subscriber does not take in time is dropped by ``Overflow`` policy, so a subscriber that stalls never
/// holds up the sender or the others, and memory stays bounded.
///
/// ```swift
/// let room = Broadcast<String>(replay: 50)                     // late joiners see the last 50 lines
/// router.webSocket("/chat", .inTask) { _, socket in
///     let messages = room.subscribe()
///     let reader = Task { for try await case .text(let text) in socket.messages { room.send(text) } }
///     for await line in messages { try await socket.send(.text(line)) }
///     reader.cancel()
/// }
/// ```
///
/// A subscription is an `AsyncSequence`: a task waiting for the next value is resumed on its own executor
/// (on its loop, for a task that prefers one: in that loop's drain), and its iteration ends when the
/// broadcast is finished (after the values already queued for it), when its task is cancelled, or when it
/// is dropped for falling behind (``Overflow/dropSubscriber``). Releasing its iterator unsubscribes it.
///
/// **Thread rule**: safe from any thread; one consumer per subscription.
public final class Broadcast<Element: Sendable>: Sendable {
    /// What happens to a subscriber whose queue is full when a value is sent.
    public enum Overflow: Sendable, Hashable {
        /// Its oldest queued value is dropped for the new one (it lags, and ``Subscription/droppedCount``
        /// says by how much): for feeds where the newest values matter most.
        case dropOldest
        /// It is unsubscribed: its iteration ends after the values already queued, and
        /// ``Subscription/wasDropped`` is true. For streams where a gap is worse than an end (a log a client
        /// must see whole, and can fetch again).
        case dropSubscriber
    }

    private let replayLimit: Int
    private let bufferLimit: Int
    private let overflow: Overflow
    private let state = Mutex(State())

    private struct State {
        var subscribers: [Int: Subscription.Core] = [:]
        var nextID = 0
        var replay: Deque<Element> = []
        var isFinished = false
    }

    /// A broadcast.
    ///
    /// - Parameters:
    ///   - replay: How many of the last values sent a new subscriber gets first (0: none).
    ///   - bufferLimit: The most values queued for one subscriber (at least 1).
    ///   - overflow: What a full queue does to its subscriber.
    public init(replay: Int = 0, bufferLimit: Int = 1024, overflow: Overflow = .dropOldest) {
        precondition(replay >= 0, "Broadcast(replay:) must not be negative, got \(replay)")
        precondition(bufferLimit >= 1, "Broadcast(bufferLimit:) must be at least 1, got \(bufferLimit)")
        replayLimit = replay
        self.bufferLimit = max(bufferLimit, replay)
        self.overflow = overflow
    }

    /// Sends `element` to every subscriber (and into the replay buffer). After ``finish()``, does nothing.
    /// Never waits. Safe from any thread.
    public func send(_ element: Element) {
        let resumed: [UnsafeContinuation<Element?, Never>] = state.withLock { state in
            guard !state.isFinished else { return [] }
            if replayLimit > 0 {
                if state.replay.count == replayLimit { state.replay.removeFirst() }
                state.replay.append(element)
            }
            var resumed: [UnsafeContinuation<Element?, Never>] = []
            for (id, core) in state.subscribers {
                if let waiter = core.waiter {
                    core.waiter = nil
                    resumed.append(waiter)
                    continue
                }
                if core.queue.count >= bufferLimit {
                    switch overflow {
                    case .dropOldest:
                        core.queue.removeFirst()
                        core.droppedCount += 1
                    case .dropSubscriber:
                        core.wasDropped = true
                        core.isEnded = true
                        state.subscribers[id] = nil
                        continue
                    }
                }
                core.queue.append(element)
            }
            return resumed
        }
        // Resumed outside the lock: a waiting subscriber had an empty queue, so this value is its next.
        for waiter in resumed { waiter.resume(returning: element) }
    }

    /// Ends the broadcast: each subscriber's iteration ends after the values queued for it; later
    /// ``send(_:)`` calls do nothing, and a later subscriber gets the replay buffer, then the end. Safe from
    /// any thread.
    public func finish() {
        let waiting: [UnsafeContinuation<Element?, Never>] = state.withLock { state in
            guard !state.isFinished else { return [] }
            state.isFinished = true
            var waiting: [UnsafeContinuation<Element?, Never>] = []
            for core in state.subscribers.values {
                core.isEnded = true
                if let waiter = core.waiter {
                    core.waiter = nil
                    waiting.append(waiter)
                }
            }
            state.subscribers.removeAll()
            return waiting
        }
        for waiter in waiting { waiter.resume(returning: nil) }
    }

    /// Whether ``finish()`` was called. Safe from any thread.
    public var isFinished: Bool { state.withLock { $0.isFinished } }

    /// The subscriptions receiving values now. Safe from any thread.
    public var subscriberCount: Int { state.withLock { $0.subscribers.count } }

    /// Subscribes: the returned sequence gets the replay buffer, then every value sent from now on. Safe
    /// from any thread.
    public func subscribe() -> Subscription {
        state.withLock { state in
            let core = Subscription.Core(queue: state.replay)
            if state.isFinished {
                core.isEnded = true
            } else {
                let id = state.nextID
                state.nextID += 1
                core.id = id
                state.subscribers[id] = core
            }
            return Subscription(broadcast: self, core: core)
        }
    }

    /// Removes a subscriber whose iteration ended (cancelled or released).
    fileprivate func unsubscribe(_ core: Subscription.Core) -> UnsafeContinuation<Element?, Never>? {
        state.withLock { state in
            if let id = core.id, state.subscribers[id] === core { state.subscribers[id] = nil }
            core.isEnded = true
            let waiter = core.waiter
            core.waiter = nil
            return waiter
        }
    }

    /// The next value for `core`, or nil at its end; suspends while its queue is empty.
    nonisolated(nonsending) fileprivate func next(for core: Subscription.Core) async -> Element? {
        await withTaskCancellationHandler {
            await withUnsafeContinuation { (continuation: UnsafeContinuation<Element?, Never>) in
                let ready: Element?? = state.withLock { _ in
                    if !core.queue.isEmpty { return .some(core.queue.removeFirst()) }
                    if core.isEnded { return .some(nil) }
                    core.waiter = continuation
                    return nil
                }
                if let ready { continuation.resume(returning: ready) }
            }
        } onCancel: {
            unsubscribe(core)?.resume(returning: nil)
        }
    }

    /// One subscriber's values, as an `AsyncSequence`; see ``Broadcast``. One consumer at a time.
    public struct Subscription: AsyncSequence, Sendable {
        public typealias Failure = Never

        let broadcast: Broadcast
        let core: Core

        /// A subscriber's queue; every field is guarded by the broadcast's lock.
        final class Core: @unchecked Sendable {  // every field is read and written under the broadcast's Mutex
            var id: Int?
            var queue: Deque<Element>
            var waiter: UnsafeContinuation<Element?, Never>?
            var droppedCount = 0
            var wasDropped = false
            var isEnded = false

            init(queue: Deque<Element>) { self.queue = queue }
        }

        /// Values dropped from this subscriber's queue because it was full (``Overflow/dropOldest``).
        public var droppedCount: Int { broadcast.state.withLock { _ in core.droppedCount } }

        /// Whether it was unsubscribed for falling behind (``Overflow/dropSubscriber``).
        public var wasDropped: Bool { broadcast.state.withLock { _ in core.wasDropped } }

        /// Ends this subscription: its iteration ends after the values queued for it. Safe from any thread.
        public func cancel() {
            broadcast.unsubscribe(core)?.resume(returning: nil)
        }

        public func makeAsyncIterator() -> Iterator { Iterator(subscription: self) }

        /// Takes the subscription's values in order; releasing it unsubscribes.
        public struct Iterator: AsyncIteratorProtocol {
            public typealias Failure = Never
            private let owner: Owner

            /// Unsubscribes when the last copy of the iterator goes.
            private final class Owner: Sendable {
                let subscription: Subscription
                init(_ subscription: Subscription) { self.subscription = subscription }
                deinit { subscription.cancel() }
            }

            init(subscription: Subscription) { owner = Owner(subscription) }

            /// The next value, or nil at the end (the broadcast finished, the task was cancelled, or the
            /// subscriber was dropped).
            public mutating func next() async -> Element? {
                await owner.subscription.broadcast.next(for: owner.subscription.core)
            }

            public mutating func next(isolation actor: isolated (any Actor)?) async -> Element? {
                await owner.subscription.broadcast.next(for: owner.subscription.core)
            }
        }
    }
}
