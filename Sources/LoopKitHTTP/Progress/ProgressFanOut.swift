import LoopKit

/// One ``TaskProgress`` served to every event stream that follows it on one loop: observed once, each
/// state encoded once, and written to the subscribers a time-budgeted slice per iteration, so that a
/// thousand subscribers cost the loop no more than its budget allows, however fast the progress moves.
///
/// - The observation is `TaskProgress.observe(on:)`: at most one new state per iteration, the final one
///   always. Each state becomes one encoded event (`progress`, then `finished` or `cancelled`), with the
///   state's number among the progress's states (``ProgressEventIDs``, shared by every fan-out of the
///   progress, on every loop) as its `id`.
/// - A pass writes the newest state to every subscriber behind it, through `loop.process` with a
///   ``fanOutBudget`` per iteration. A subscriber reached late gets the newest state, never a stale one.
///   A subscriber whose connection is above its write high-water mark (a slow client) is skipped and
///   retried ``retryDelay`` later: a write never waits, and a slow client never holds up the others.
/// - A subscriber that resumes (`Last-Event-ID`) counts as having been written the states up to that id.
/// - A subscriber's stream ends once it has been written the final state, or when its client leaves.
///
/// Loop-confined: one per (progress, loop), kept in the loop's local values while it has subscribers,
/// created and used on the loop's thread. It is `@unchecked Sendable` only so that the loop's callbacks
/// (the observation, the retry timer, a cancellation's hop) can capture it; all of them run on that loop,
/// as ``HTTPLoopContext``'s do.
final class ProgressFanOut: @unchecked Sendable {  // loop-confined: subscribers and observation live on the progress's loop
    /// The time a pass may spend writing to subscribers in one iteration.
    static let fanOutBudget = ProcessingBudget.time(.microseconds(300))
    /// When a pass left slow subscribers behind, the next pass starts this much later.
    static let retryDelay = Duration.milliseconds(10)

    private let progress: TaskProgress
    private let loop: EventLoop
    private let ids: ProgressEventIDs
    private var observation: ProgressObservation?
    /// The newest state: its id (from 1, ``ProgressEventIDs``), encoded event and whether it is the final one.
    private var latest: (sequence: Int, event: [UInt8], isFinal: Bool)?
    private var subscribers: [ObjectIdentifier: Subscriber] = [:]
    private var passRunning = false
    private var retryScheduled = false

    /// One event stream following the progress.
    private final class Subscriber {
        let writer: ServerSentEventWriter
        /// The id of the last state written to it, or seen before it resumed (0: none yet).
        var delivered = 0
        /// Resumes the stream's task, once: when the final state is written or the client leaves.
        var end: CheckedContinuation<Void, Never>?

        init(writer: ServerSentEventWriter) { self.writer = writer }

        func finish() {
            let end = end
            self.end = nil
            end?.resume()
        }
    }

    private init(progress: TaskProgress, loop: EventLoop) {
        self.progress = progress
        self.loop = loop
        ids = ProgressEventIDs.of(progress)
    }

    /// The fan-out of `progress` on `writer`'s loop (made on first use). Loop thread.
    static func of(_ progress: TaskProgress, on loop: EventLoop) -> ProgressFanOut {
        loop.localValue(for: key(progress)) { ProgressFanOut(progress: progress, loop: loop) }
    }

    private static func key(_ progress: TaskProgress) -> ObjectIdentifier { ObjectIdentifier(progress) }

    /// Follows the progress on `writer` until the final state has been written to it or its client left
    /// (the task is cancelled), starting after the state with id `seen` (0: from the newest state). Call
    /// from the stream's task, on the loop.
    func follow(with writer: ServerSentEventWriter, after seen: Int) async {
        let subscriber = Subscriber(writer: writer)
        subscriber.delivered = seen
        let id = ObjectIdentifier(subscriber)
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                if let latest, latest.isFinal, latest.sequence <= seen {
                    continuation.resume()  // it has seen the end (numbered since its request was answered)
                    return
                }
                subscriber.end = continuation
                subscribers[id] = subscriber
                if observation == nil && latest?.isFinal != true {
                    observation = progress.observe(on: loop) { [weak self] snapshot in self?.publish(snapshot) }
                }
                if latest != nil { startPass() }
                if Task.isCancelled { leave(id) }
            }
        } onCancel: {
            let loop = loop
            do {
                try loop.invoke { [weak self] in self?.leave(id) }
            } catch {
                // The loop has shut down: its connections, and so this stream, ended with it.
            }
        }
        if subscribers.isEmpty { retire() }
    }

    /// A new state of the progress (the observation, on the loop): encoded once, then written by passes.
    private func publish(_ snapshot: ProgressSnapshot) {
        guard let sequence = ids.id(for: snapshot) else { return }  // stale: the final state follows
        let kind = snapshot.isCancelled ? "cancelled" : snapshot.isFinished ? "finished" : "progress"
        let event: [UInt8]
        do {
            event = try ServerSentEvent(event: kind, id: String(sequence), data: snapshot.jsonObject).encodedArray()
        } catch {
            preconditionFailure("a progress event's fields hold no line break: \(error)")
        }
        let isFinal = snapshot.isFinished || snapshot.isCancelled
        latest = (sequence, event, isFinal)
        if isFinal {
            observation?.cancel()
            observation = nil
            // A subscriber that resumed after the final state has nothing more to get.
            for (id, subscriber) in subscribers where subscriber.delivered >= sequence {
                subscribers.removeValue(forKey: id)
                subscriber.finish()
            }
        }
        startPass()
    }

    /// Writes the newest state to every subscriber behind it, a budgeted slice per iteration.
    private func startPass() {
        guard !passRunning, let latest else { return }
        let behind = subscribers.values.filter { $0.delivered < latest.sequence }
        guard !behind.isEmpty else { return }
        passRunning = true
        do {
            try loop.process(behind, budget: Self.fanOutBudget, each: { [weak self] subscriber in
                self?.deliver(to: subscriber)
            }, completion: { [weak self] _ in
                guard let self else { return }
                passRunning = false
                afterPass()
            })
        } catch {
            passRunning = false  // the loop is shutting down: its connections end, and the streams with them
        }
    }

    /// Writes the newest state to `subscriber` if it is behind and its connection has room.
    private func deliver(to subscriber: Subscriber) {
        guard let latest, subscriber.end != nil, subscriber.delivered < latest.sequence else { return }
        guard subscriber.writer.hasRoom else { return }  // a slow client: retried by a later pass
        subscriber.writer.writeEncoded(latest.event)
        subscriber.delivered = latest.sequence
        if latest.isFinal {
            subscribers.removeValue(forKey: ObjectIdentifier(subscriber))
            subscriber.finish()
        }
    }

    /// After a pass: another at once if a newer state came meanwhile; later if slow subscribers were left.
    private func afterPass() {
        guard let latest else { return }
        let behind = subscribers.values.filter { $0.delivered < latest.sequence }
        guard !behind.isEmpty else { return }
        if behind.contains(where: { $0.writer.hasRoom }) {
            startPass()
        } else if !retryScheduled {
            retryScheduled = true
            do {
                try loop.schedule(after: Self.retryDelay) { [weak self] in
                    guard let self else { return }
                    retryScheduled = false
                    startPass()
                }
            } catch {
                retryScheduled = false  // the loop is shutting down
            }
        }
    }

    /// A subscriber's client left (or its stream ended): forget it and resume its task.
    private func leave(_ id: ObjectIdentifier) {
        subscribers.removeValue(forKey: id)?.finish()
        if subscribers.isEmpty { retire() }
    }

    /// No subscriber left: stop observing and leave the loop's values, so that a later stream starts afresh.
    private func retire() {
        guard subscribers.isEmpty else { return }
        observation?.cancel()
        observation = nil
        loop.removeLocalValue(for: Self.key(progress))
    }
}
