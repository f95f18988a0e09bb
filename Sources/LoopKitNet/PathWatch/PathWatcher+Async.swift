import LoopKit

extension PathWatcher {
    /// The events as an asynchronous sequence, one ``PathEvent`` at a time, in the order they were told.
    ///
    /// The consumer's demand drives reading: the inotify descriptor is read from the first `next()` on, and
    /// while fewer than ``bufferLimit`` events wait untaken (then the kernel queues, and past its own limit
    /// drops and tells one ``PathChanges/overflow`` event). The sequence ends (nil) after ``close()`` once
    /// the events it holds are taken, and throws ``PathWatchError/loopShutDown`` when the loop shuts down.
    /// When the consuming task is cancelled, a suspended `next()` returns nil (in the loop's next drain).
    /// Every suspended `next()` is resumed exactly once: by an event, the end, the error or the
    /// cancellation. One consumer at a time, and not together with ``onEvents(_:)``.
    ///
    /// Iterate on the loop's thread: from a `Task` whose executor preference is ``loop``.
    public var events: Events { Events(watcher: self) }

    /// The events of a watcher; see ``PathWatcher/events``.
    public struct Events: AsyncSequence, Sendable {
        public typealias Element = PathEvent
        public typealias Failure = PathWatchError

        let watcher: PathWatcher

        /// Makes the iterator. Call on the watcher's loop's thread.
        public func makeAsyncIterator() -> Iterator { Iterator(watcher: watcher) }

        /// Takes the next event.
        public struct Iterator: AsyncIteratorProtocol {
            public typealias Element = PathEvent
            public typealias Failure = PathWatchError

            let watcher: PathWatcher

            /// The next event; nil once the watcher is closed or the task is cancelled. Call on the
            /// watcher's loop's thread.
            /// - Throws: ``PathWatchError/loopShutDown`` when the loop shut down.
            public mutating func next() async throws(PathWatchError) -> PathEvent? {
                try await watcher.nextEvent()
            }

            /// The next event; nil once the watcher is closed or the task is cancelled. Call on the
            /// watcher's loop's thread.
            /// - Throws: ``PathWatchError/loopShutDown`` when the loop shut down.
            public mutating func next(isolation actor: isolated (any Actor)?) async throws(PathWatchError) -> PathEvent? {
                try await watcher.nextEvent()
            }
        }
    }

    /// The next event; suspends until one is told, the watcher closes or the task is cancelled. Loop
    /// thread only.
    func nextEvent() async throws(PathWatchError) -> PathEvent? {
        checkThread("events")
        precondition(eventsHandler == nil, "PathWatcher.events: the watcher already has an onEvents handler")
        if !asyncConsumerStarted {
            asyncConsumerStarted = true
            updateReadInterest()
        }
        if let ready = eventReadyNow() { return try ready.get() }
        if Task.isCancelled { return nil }
        nextWaiterToken &+= 1
        let token = nextWaiterToken
        let result = await withTaskCancellationHandler {
            await SingleConsumerWaiter.waitForOutcome(readyNow: { eventReadyNow() }) { continuation in
                readWaiter.park(continuation, for: "PathWatcher.events")
                readWaiterToken = token
                updateReadInterest()
            }
        } onCancel: {
            cancelWaiter(token)
        }
        return try result.get()
    }

    /// Resumes the waiter `token` with nil, in the loop's next drain (after it was stored, also when the
    /// task was cancelled before it suspended). Safe from any thread.
    private func cancelWaiter(_ token: UInt64) {
        do {
            try loop.enqueue { [self] in
                guard readWaiterToken == token, let consumer = readWaiter.unpark() else { return }  // resumed already
                consumer.resume(with: .success(nil))
            }
        } catch {
            // The loop is shutting down: its shutdown observer closes the watcher and resumes the waiter.
        }
    }

    /// What a consumer gets without waiting: an event, the end, or the error; nil when it must wait.
    private func eventReadyNow() -> Result<PathEvent?, PathWatchError>? {
        if inboundHead < inbound.count {
            let event = inbound[inboundHead]
            inboundHead += 1
            if inboundHead == inbound.count {
                inbound.removeAll(keepingCapacity: true)
                inboundHead = 0
            } else if inboundHead >= 1024 && inboundHead * 2 >= inbound.count {
                inbound.removeFirst(inboundHead)
                inboundHead = 0
            }
            updateReadInterest()
            return .success(event)
        }
        if let closeReason { return closeReason == .closed ? .success(nil) : .failure(closeReason) }
        return nil
    }
}
