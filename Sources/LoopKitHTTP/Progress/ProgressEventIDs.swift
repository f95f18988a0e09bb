import LoopKit

/// The ids of one ``TaskProgress``'s server-sent events, shared by every stream that serves it, on any loop
/// and over any connection, for as long as the progress lives: a new state takes the next number, so a
/// client's `Last-Event-ID` says which states it has seen, whichever connection it reconnects on.
///
/// - A state is numbered when a fan-out (``ProgressFanOut``) publishes it. A state equal to the last one
///   numbered (the same units, fraction and flags; throughput and time left aside) keeps its id: a stream
///   that starts over an unchanged progress does not send a client what it has seen under a new id.
/// - The final state (finished or cancelled) is numbered once; every stream sends it under that id.
/// - An id never given (another server's, a made-up one) means nothing: the client starts afresh.
///
/// Safe from any thread: the numbers are behind a lock (LoopKit's `Lock`, which the thread sanitizer
/// sees); each progress's ids are found through a table of weak references, so they live as long as the
/// progress and no longer.
final class ProgressEventIDs: Sendable {
    private struct Numbers {
        /// The last id given (0: none yet).
        var last = 0
        /// The state given ``last``.
        var lastState: ProgressSnapshot?
        /// The final state's id, once given.
        var final: Int?
        /// Streams open now that own the progress (``HTTPServerResponse/progressEvents(_:cancelsWhenAbandoned:keepAlive:)``).
        var owners = 0
    }

    /// Where a stream starts for a client that has seen the events up to some id.
    enum Resumption: Equatable {
        /// Send the states numbered after this id (0: from the current state).
        case after(Int)
        /// The client has seen the final state: there is nothing more to send it.
        case finalStateSeen
    }

    private let numbers = Lock(Numbers())

    private init() {}

    /// The ids of `progress`, made on first use.
    static func of(_ progress: TaskProgress) -> ProgressEventIDs {
        table.withLock { table in
            let key = ObjectIdentifier(progress)
            // An entry whose progress has gone is another progress's: identifiers are reused.
            if let entry = table.entries[key], entry.progress === progress { return entry.ids }
            let ids = ProgressEventIDs()
            table.entries[key] = Entry(progress: progress, ids: ids)
            if table.entries.count >= table.pruneAt {
                // Forget the progresses that have gone, once the table has doubled: amortised O(1).
                table.entries = table.entries.filter { $0.value.progress != nil }
                table.pruneAt = max(64, 2 * table.entries.count)
            }
            return ids
        }
    }

    private struct Entry {
        weak var progress: TaskProgress?
        let ids: ProgressEventIDs
    }

    /// The ids of every progress served, by identity, with weak references to the progresses.
    private struct Table {
        var entries: [ObjectIdentifier: Entry] = [:]
        /// The size at which the entries of progresses that have gone are forgotten.
        var pruneAt = 64
    }

    private static let table = Lock(Table())

    /// The id of `snapshot`, a state of the progress just observed: the last id if the state is unchanged,
    /// the next one otherwise; the final state's id for the final state, however often it is observed.
    ///
    /// - Returns: The id, or nil for a state observed before the final one but numbered after it (another
    ///   loop's observation came first): a stale state, not to be sent.
    func id(for snapshot: ProgressSnapshot) -> Int? {
        let isFinal = snapshot.isFinished || snapshot.isCancelled
        var state = snapshot
        state.throughput = nil
        state.estimatedTimeRemaining = nil
        return numbers.withLock { numbers in
            if let final = numbers.final { return isFinal ? final : nil }
            if state != numbers.lastState {
                numbers.last += 1
                numbers.lastState = state
            }
            if isFinal { numbers.final = numbers.last }
            return numbers.last
        }
    }

    /// Where to start for a client whose `Last-Event-ID` is `lastEventID` (nil when it sent none).
    func resumption(after lastEventID: String?) -> Resumption {
        guard let lastEventID, let seen = Int(lastEventID), seen > 0 else { return .after(0) }
        return numbers.withLock { numbers in
            guard seen <= numbers.last else { return .after(0) }  // never given: start afresh
            if let final = numbers.final, seen >= final { return .finalStateSeen }
            return .after(seen)
        }
    }

    /// A stream that owns the progress has started.
    func addOwner() {
        numbers.withLock { $0.owners += 1 }
    }

    /// A stream that owns the progress has ended; returns how many are left.
    func removeOwner() -> Int {
        numbers.withLock { numbers in
            numbers.owners -= 1
            return numbers.owners
        }
    }
}
