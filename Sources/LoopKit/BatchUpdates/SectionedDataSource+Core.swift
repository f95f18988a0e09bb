import Synchronization

extension SectionedDataSource {
    /// The part of a data source that worker jobs and deliveries hold: the generation counter, the
    /// committed snapshot the worker diffs against, the loop-confined model, and the subscribers.
    ///
    /// Worker jobs hold the core rather than the data source, so releasing the data source (and the
    /// worker group it may own) never happens on a worker thread.
    final class Core: Sendable {
        /// The model as the loop sees it. Loop thread only.
        struct State {
            /// The model; inside a commit's batch, the stage's sections.
            var sections: [Section]
            /// The number of commits so far.
            var revision: UInt64 = 0
            /// The generation of the last committed changes (0: none yet).
            var committedGeneration: UInt64 = 0
            /// The generation and sections of the last delivery, re-diffed when a commit makes it stale.
            var lastDelivered: (generation: UInt64, sections: [Section])?
            /// True while ``SectionedDataSource/commit(_:to:)`` runs.
            var isCommitting = false
            /// Receives each delivery.
            var handler: ((Changes) -> Void)?
            /// Receives what went wrong without a caller to throw to (the worker refusing a re-diff).
            var diagnostic: ((String) -> Void)?
        }

        /// The model's last committed revision and sections: what the worker diffs against.
        struct Snapshot: Sendable {
            var revision: UInt64
            var sections: [Section]
        }

        /// The streams of ``SectionedDataSource/changes(bufferingPolicy:)``, by subscription number.
        struct Subscribers: Sendable {
            var next = 0
            var continuations: [Int: AsyncStream<Changes>.Continuation] = [:]
            var isClosed = false
        }

        let loop: EventLoop
        let worker: EventLoop
        let reloadThreshold: Int?
        /// The generation of the newest submit.
        let latestGeneration = Atomic<UInt64>(0)
        let committed: Lock<Snapshot>
        let state: LoopConfined<State>
        let subscribers = Lock(Subscribers())
        /// Set when the data source is released: nothing is delivered after.
        let isClosed = Atomic<Bool>(false)

        init(_ sections: [Section], loop: EventLoop, worker: EventLoop, reloadThreshold: Int?) {
            self.loop = loop
            self.worker = worker
            self.reloadThreshold = reloadThreshold
            committed = Lock(Snapshot(revision: 0, sections: sections))
            state = LoopConfined(State(sections: sections), owner: loop.owner)
        }

        /// Queues a diff from the committed model to `sections` on the worker. Safe from any thread.
        func requestDiff(generation: UInt64, to sections: [Section]) throws(EventLoopError) {
            try worker.enqueue { [self] in
                // A newer submit makes this one stale: skip the work.
                guard latestGeneration.load(ordering: .acquiring) == generation else { return }
                let base = committed.withLock { $0 }
                let diff = SectionedDiff(from: base.sections, to: sections, reloadThreshold: reloadThreshold)
                let changes = Changes(
                    generation: generation, baseRevision: base.revision, diff: diff, stages: diff.stages(),
                    source: ObjectIdentifier(self))
                do {
                    try loop.enqueue { [self] in deliver(changes) }
                } catch {
                    // The loop has shut down: nothing can be delivered any more, so the streams end
                    // (their consumers' loops finish) rather than wait forever.
                    close()
                }
            }
        }

        /// Hands `changes` to the handler and the streams, unless they are stale. Loop thread only.
        func deliver(_ changes: Changes) {
            guard !isClosed.load(ordering: .acquiring),
                changes.generation == latestGeneration.load(ordering: .acquiring),
                changes.generation > state.value.committedGeneration
            else { return }  // a newer submit (or its commit) supersedes these changes: drop them
            guard changes.baseRevision == state.value.revision else {
                // The model was committed to while the worker diffed: diff the same submit again.
                rediff(generation: changes.generation, to: changes.sections)
                return
            }
            state.value.lastDelivered = (changes.generation, changes.sections)
            let handler = state.value.handler
            handler?(changes)
            let continuations = subscribers.withLock { Array($0.continuations.values) }
            for continuation in continuations { continuation.yield(changes) }
        }

        /// Publishes a commit to the worker and re-diffs a newer delivery it made stale. Loop thread only.
        func didCommit(_ sections: [Section], revision: UInt64, generation: UInt64) {
            committed.withLock { $0 = Snapshot(revision: revision, sections: sections) }
            guard let pending = state.value.lastDelivered, pending.generation > generation,
                pending.generation == latestGeneration.load(ordering: .acquiring)
            else { return }
            state.value.lastDelivered = nil
            rediff(generation: pending.generation, to: pending.sections)
        }

        /// Diffs a submit again; a worker that refuses (shut down) ends deliveries, and says so through
        /// the diagnostic handler and by finishing the streams. Loop thread only.
        private func rediff(generation: UInt64, to sections: [Section]) {
            do {
                try requestDiff(generation: generation, to: sections)
            } catch {
                close()
                state.value.diagnostic?(
                    "SectionedDataSource: submit \(generation) needed a new diff, but the diff worker refused it "
                        + "(\(error)); no further changes will be delivered")
            }
        }

        /// Adds a stream; it finishes at once when the data source is already released. Any thread.
        func subscribe(_ continuation: AsyncStream<Changes>.Continuation) {
            let id: Int? = subscribers.withLock { subscribers in
                guard !subscribers.isClosed else { return nil }
                defer { subscribers.next += 1 }
                subscribers.continuations[subscribers.next] = continuation
                return subscribers.next
            }
            guard let id else {
                continuation.finish()
                return
            }
            continuation.onTermination = { [weak self] _ in
                _ = self?.subscribers.withLock { $0.continuations.removeValue(forKey: id) }
            }
        }

        /// Stops deliveries and finishes every stream. Any thread.
        func close() {
            isClosed.store(true, ordering: .releasing)
            let continuations = subscribers.withLock { subscribers in
                subscribers.isClosed = true
                defer { subscribers.continuations = [:] }
                return Array(subscribers.continuations.values)
            }
            for continuation in continuations { continuation.finish() }
        }
    }
}
