/// State that only the thread owning a loop may touch.
///
/// This is the one place LoopKit vouches for thread safety by rule rather than by lock: the value
/// is read and written only on `owner`'s thread (checked in debug builds on every access), which is
/// the invariant the unchecked conformance stands for. The loop's hot path (its queue drain, its
/// timers) runs without a lock because of it.
@usableFromInline
final class LoopConfined<Value: ~Copyable>: @unchecked Sendable {  // the confinement check itself: each access checks
    @usableFromInline @exclusivity(unchecked) var storage: Value
    @usableFromInline let owner: ThreadID

    init(_ value: consuming Value, owner: ThreadID) {
        storage = value
        self.owner = owner
    }

    /// The value. Call on the owner thread only.
    @inlinable @inline(__always) var value: Value {
        _read {
            assert(owner.isCurrent, "LoopKit: loop-confined state touched off its loop thread")
            yield storage
        }
        _modify {
            assert(owner.isCurrent, "LoopKit: loop-confined state touched off its loop thread")
            yield &storage
        }
    }

    /// The value, for teardown when no other thread can hold a reference any more.
    var valueForTeardown: Value {
        _read { yield storage }
        _modify { yield &storage }
    }
}
