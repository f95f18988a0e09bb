/// The one suspended consumer of a loop-confined asynchronous sequence, and the rules for suspending and
/// resuming it.
///
/// Every single-consumer sequence of the package is the same bridge: a producer on the loop (a read
/// callback, a parser) hands elements to one consumer, a task on the loop, and the sequence's owner keeps
/// what the consumer has not taken yet. The owner stores one of these inline (8 bytes, the optional
/// continuation it holds) and its `next()` is ``next(isolation:readyNow:wait:)``:
///
/// ```swift
/// func nextChunk() async throws(NetError) -> Bytes? {
///     try await SingleConsumerWaiter.next(readyNow: { chunkReadyNow() }) { continuation in
///         readWaiter.park(continuation, for: "Connection.inbound")
///         updateReadInterest()  // backpressure: a waiting consumer wants bytes
///     }
/// }
///
/// // The producer, on the loop: to the waiting consumer, or into the buffer.
/// if let consumer = readWaiter.unpark() { consumer.resume(returning: chunk) } else { buffer.append(chunk) }
/// ```
///
/// The rules it owns:
/// - **Ready now, no suspension.** An element, the end or the failure that is ready when the consumer asks
///   is returned at once: no continuation, no allocation, no executor hop.
/// - **A second look before parking.** A task may hop to its executor between the first look and the
///   continuation's closure (from an actor's isolation, say); an element that arrived meanwhile would
///   otherwise wait for an event that never comes, so the closure looks again and resumes at once.
/// - **One consumer.** Parking a second continuation while one waits stops the process (a precondition,
///   checked in release builds too) with a message naming the sequence.
/// - **Exactly once.** The producer takes the parked consumer out with ``unpark()`` and resumes it with an
///   element, the end, the failure or the loop's shutdown, whichever it sees first: the waiter is empty
///   from then on, and neither the waiter nor the ``ParkedConsumer`` is copyable, so no copy can resume the
///   continuation again.
///
/// Resuming only enqueues the consumer's task on its executor: a task resumed from a callback runs in the
/// drain (phase 3) of the same iteration (the loop's ordering contract, rule R2; R14 and R16 for datagrams
/// and path events), as the hand-built bridges this replaced did.
///
/// Loop-confined: touched only on its owner's loop's thread.
@usableFromInline
package struct SingleConsumerWaiter<Element: Sendable, Failure: Error>: ~Copyable {
    /// What a consumer is given: an element, the end (nil) or the failure.
    @usableFromInline package typealias Outcome = Result<Element?, Failure>

    /// The suspended consumer, if one waits.
    @usableFromInline var continuation: UnsafeContinuation<Outcome, Never>?

    /// No consumer waits. Loop thread.
    @inlinable
    package init() { continuation = nil }

    /// Whether a consumer is suspended, waiting for an element or the end. Loop thread.
    @inlinable
    package var isWaiting: Bool { continuation != nil }

    /// The consumer's `next()`: what `readyNow` gives, without suspending, or else the continuation is
    /// given to `wait` to park (after `readyNow` is asked once more, inside the continuation's closure)
    /// and the consumer suspends until the producer resumes it.
    ///
    /// - Parameters:
    ///   - isolation: The caller's isolation, kept while it suspends (no executor hop).
    ///   - readyNow: What the consumer gets without waiting (taking it out of the owner's buffer): an
    ///     element, the end (`.success(nil)`) or the failure; nil when it must wait.
    ///   - wait: Parks the continuation, with ``park(_:for:)`` on the owner's waiter, and updates what the
    ///     owner's backpressure depends on (its read interest, say).
    /// - Returns: The element, or nil at the end.
    /// - Throws: The failure that `readyNow` or the producer gave.
    ///
    /// Call on the loop's thread (from a task on the loop).
    @inlinable
    package static func next(
        isolation: isolated (any Actor)? = #isolation,
        readyNow: () -> Outcome?,
        wait: (UnsafeContinuation<Outcome, Never>) -> Void
    ) async throws(Failure) -> Element? {
        if let ready = readyNow() { return try ready.get() }
        return try await waitForOutcome(isolation: isolation, readyNow: readyNow, wait: wait).get()
    }

    /// The waiting half of ``next(isolation:readyNow:wait:)``, for a consumer that has looked already
    /// (and, say, checked for its task's cancellation): suspends, asks `readyNow` once more inside the
    /// continuation's closure and, when nothing is ready, gives the continuation to `wait` to park.
    ///
    /// - Parameters:
    ///   - isolation: The caller's isolation, kept while it suspends (no executor hop).
    ///   - readyNow: As for ``next(isolation:readyNow:wait:)``.
    ///   - wait: As for ``next(isolation:readyNow:wait:)``.
    /// - Returns: The element, the end (`.success(nil)`) or the failure.
    ///
    /// Call on the loop's thread (from a task on the loop).
    @inlinable
    package static func waitForOutcome(
        isolation: isolated (any Actor)? = #isolation,
        readyNow: () -> Outcome?,
        wait: (UnsafeContinuation<Outcome, Never>) -> Void
    ) async -> Outcome {
        await withUnsafeContinuation(isolation: isolation) { (continuation: UnsafeContinuation<Outcome, Never>) in
            // The task may have hopped before this runs (from an actor's isolation, say): look again, or
            // an element that arrived meanwhile would wait for an event that never comes.
            if let ready = readyNow() {
                continuation.resume(returning: ready)
            } else {
                wait(continuation)
            }
        }
    }

    /// Parks the suspended consumer until the producer ``unpark()``s it.
    ///
    /// A second consumer while one waits is a programmer error: it stops the process with
    /// "`sequence` has one consumer at a time".
    ///
    /// - Parameters:
    ///   - continuation: The consumer's continuation.
    ///   - sequence: The sequence's name, for the message (`"Connection.inbound"`).
    ///
    /// Loop thread.
    @inlinable
    package mutating func park(_ continuation: UnsafeContinuation<Outcome, Never>, for sequence: StaticString) {
        precondition(self.continuation == nil, "\(sequence) has one consumer at a time")
        self.continuation = continuation
    }

    /// Takes the parked consumer out, to be resumed (once) with an element, the end, the failure or the
    /// loop's shutdown; nil when none waits.
    ///
    /// The consumer is resumed after this access to the waiter has ended, so no call runs inside an access
    /// to its owner's property: the compiler then drops the runtime's exclusivity checks on it, as it did
    /// for the bare optional continuation this replaced.
    ///
    /// Loop thread.
    @inlinable
    package mutating func unpark() -> ParkedConsumer? {
        guard let continuation else { return nil }
        self.continuation = nil
        return ParkedConsumer(continuation)
    }

    /// A consumer taken out of its waiter by ``unpark()``: resumed exactly once. Not copyable, and
    /// resuming consumes it, so it cannot be resumed twice; dropping it unresumed (its task would never
    /// go on) stops a debug build.
    @frozen @usableFromInline
    package struct ParkedConsumer: ~Copyable {
        @usableFromInline let continuation: UnsafeContinuation<Outcome, Never>

        @inlinable
        init(_ continuation: UnsafeContinuation<Outcome, Never>) { self.continuation = continuation }

        /// Resumes the consumer with `element`. Its task runs in the loop's next drain. Loop thread.
        @inlinable
        package consuming func resume(returning element: Element) {
            let continuation = continuation
            discard self
            continuation.resume(returning: .success(element))
        }

        /// Resumes the consumer with `outcome`: the end (`.success(nil)`), the failure or the loop's
        /// shutdown. Loop thread.
        @inlinable
        package consuming func resume(with outcome: Outcome) {
            let continuation = continuation
            discard self
            continuation.resume(returning: outcome)
        }

        @inlinable
        deinit {
            assertionFailure("a parked consumer was dropped without being resumed: its task would wait forever")
        }
    }
}
