import Synchronization

// Observation on an event loop, coalesced to at most one delivery per loop iteration per observer.
//
// Protocol (all orderings sequentially consistent):
// - A node's `signalsObservers` flag is set while it has observers and no notification is outstanding.
//   A change that finds it set clears it and, for each observer whose `isScheduled` flag it turns from
//   false to true, enqueues one delivery. Changes that find it clear cost one atomic load.
// - A delivery clears its `isScheduled`, sets the node's `signalsObservers` again, and only then reads the
//   snapshot. A change racing with the delivery is either in that snapshot or finds the flag set and
//   enqueues the next delivery, so the final state (finished, cancelled) is always delivered.
// - Changes in descendants reach the node through the staleness walk (see TaskProgress+Tree.swift).

/// One observer: its loop, its handler and its delivery flags.
final class ObserverBox: Sendable {
    let loop: EventLoop
    let handler: @Sendable (ProgressSnapshot) -> Void
    /// A delivery is enqueued and has not started yet.
    let isScheduled = Atomic<Bool>(false)
    /// The observation ended; pending deliveries do nothing.
    let isCancelled = Atomic<Bool>(false)

    init(loop: EventLoop, handler: @escaping @Sendable (ProgressSnapshot) -> Void) {
        self.loop = loop
        self.handler = handler
    }
}

/// A live observation of a ``TaskProgress``, ended by ``cancel()`` or when the token is released.
///
/// Safe from any thread.
public final class ProgressObservation: Sendable {
    private let progress: TaskProgress
    private let box: ObserverBox

    init(progress: TaskProgress, box: ObserverBox) {
        self.progress = progress
        self.box = box
    }

    /// Ends the observation: no delivery starts after this returns (one already running on the loop
    /// finishes). Calling it again does nothing.
    ///
    /// Safe from any thread.
    public func cancel() {
        progress.removeObserver(box)
    }

    deinit { cancel() }
}

extension TaskProgress {
    /// Calls `handler` on `loop`'s thread with a snapshot of this progress: once soon after registering,
    /// then after changes to this progress or any descendant, at most once per loop iteration.
    ///
    /// However many changes happen between two iterations, on however many threads, the handler runs once
    /// with the latest state; the final state (finished, cancelled) is always delivered. If the loop shuts
    /// down, the observation ends.
    ///
    /// Safe from any thread; `handler` runs on the loop thread.
    /// - Parameters:
    ///   - loop: The loop that runs `handler`.
    ///   - handler: Receives each snapshot.
    /// - Returns: A token that ends the observation when cancelled or released: keep it.
    public func observe(
        on loop: EventLoop,
        _ handler: @escaping @Sendable (ProgressSnapshot) -> Void
    ) -> ProgressObservation {
        let box = ObserverBox(loop: loop, handler: handler)
        state.withLock { s in
            s.observers.append(box)
            flags.bitwiseOr(Flags.signalsObservers, ordering: .sequentiallyConsistent)
        }
        schedule(box)
        return ProgressObservation(progress: self, box: box)
    }

    /// The snapshots of this progress, delivered on `loop` with the same coalescing as
    /// ``observe(on:_:)``, ending after a finished or cancelled snapshot.
    ///
    /// A slow consumer sees the newest snapshot (older undelivered ones are dropped). Ending the
    /// iteration ends the observation.
    ///
    /// Safe from any thread.
    /// - Parameter loop: The loop on which the snapshots are taken.
    /// - Returns: An asynchronous sequence of snapshots.
    public func snapshots(on loop: EventLoop) -> AsyncStream<ProgressSnapshot> {
        AsyncStream(bufferingPolicy: .bufferingNewest(1)) { continuation in
            let observation = observe(on: loop) { snapshot in
                continuation.yield(snapshot)
                if snapshot.isFinished || snapshot.isCancelled { continuation.finish() }
            }
            continuation.onTermination = { _ in observation.cancel() }
        }
    }

    /// Schedules a delivery for every observer that has none outstanding.
    func notifyObservers() {
        let observers = state.withLock { $0.observers }
        for box in observers { schedule(box) }
    }

    /// Enqueues one delivery for `box` unless one is already outstanding.
    private func schedule(_ box: ObserverBox) {
        guard !box.isScheduled.exchange(true, ordering: .sequentiallyConsistent) else { return }
        do {
            try box.loop.enqueue { [self] in deliver(to: box) }
        } catch {
            removeObserver(box)  // the loop shut down: nothing can run the handler any more
        }
    }

    /// Runs on the observer's loop: re-arms the flags, then reads and hands over the latest snapshot.
    private func deliver(to box: ObserverBox) {
        guard !box.isCancelled.load(ordering: .sequentiallyConsistent) else { return }
        box.isScheduled.store(false, ordering: .sequentiallyConsistent)
        state.withLock { s in
            if !s.observers.isEmpty {
                flags.bitwiseOr(Flags.signalsObservers, ordering: .sequentiallyConsistent)
            }
        }
        box.handler(snapshot())
    }

    /// Ends `box`'s observation.
    func removeObserver(_ box: ObserverBox) {
        guard !box.isCancelled.exchange(true, ordering: .sequentiallyConsistent) else { return }
        state.withLock { s in
            s.observers.removeAll { $0 === box }
            if s.observers.isEmpty {
                flags.bitwiseAnd(~Flags.signalsObservers, ordering: .sequentiallyConsistent)
            }
        }
    }
}
