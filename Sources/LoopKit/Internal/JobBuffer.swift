/// A unit of queued work: just the closure, 16 bytes, so queuing copies two words.
///
/// A struct, not a bare function type, on purpose: a function type stored through a generic pointer is
/// kept at its most general abstraction, so every store would allocate a reabstraction thunk. A struct
/// field keeps the closure as it is.
struct Job: Sendable {
    let run: @Sendable () -> Void

    @inline(__always)
    init(_ run: @escaping @Sendable () -> Void) { self.run = run }
}

/// A FIFO of jobs in one contiguous allocation that a drain empties by moving each job out.
///
/// `Array` would retain, release and destroy every job on the way through; moving costs one release.
/// The buffer's storage is reused from drain to drain, so a steady-state enqueue never allocates
/// (no allocation per enqueue beyond the closure's own).
///
/// The unchecked conformance stands for unique ownership: the buffer is noncopyable, so exactly one
/// owner can reach its storage, and every element is a `@Sendable` closure. Moving a buffer between
/// threads (through the loop's lock) is therefore as safe as moving an array of those closures.
struct JobBuffer: ~Copyable, @unchecked Sendable {  // its jobs are handed from producer to loop under the queue's lock
    private var base: UnsafeMutablePointer<Job>
    private var capacity: Int
    /// The number of jobs held.
    private(set) var count = 0

    /// Creates a buffer; a capacity of 0 allocates nothing until the first append.
    init(capacity: Int = 256) {
        self.capacity = capacity
        base = capacity > 0 ? .allocate(capacity: capacity) : Self.unallocated
    }

    deinit {
        base.deinitialize(count: count)
        if capacity > 0 { base.deallocate() }
    }

    /// A well-aligned address that is never dereferenced, for empty buffers.
    private static var unallocated: UnsafeMutablePointer<Job> {
        UnsafeMutablePointer(bitPattern: MemoryLayout<Job>.alignment)!
    }

    var isEmpty: Bool { count == 0 }

    /// Appends a job at the back.
    @inline(__always)
    mutating func append(_ job: consuming Job) {
        if count == capacity { grow(to: max(capacity * 2, 64)) }
        (base + count).initialize(to: job)
        count += 1
    }

    /// Moves every job of `other` to the back of this buffer, leaving `other` empty.
    mutating func append(contentsOf other: inout JobBuffer) {
        guard other.count > 0 else { return }
        if count + other.count > capacity { grow(to: max(capacity * 2, count + other.count)) }
        (base + count).moveInitialize(from: other.base, count: other.count)
        count += other.count
        other.count = 0
    }

    /// Runs the first `limit` jobs in order, moving each out before it runs, and keeps the rest (in
    /// order) at the front. Returns how many ran.
    @inline(__always)
    mutating func runFront(limit: Int) -> Int {
        let ran = min(limit, count)
        var index = 0
        while index < ran {
            // The closure itself is moved out and called: its context is released once, after the call.
            // (Calling `job.run()` on a moved-out job, or the job in place, made the compiler retain the
            // context for the call and release it twice after: two more atomic operations on a reference
            // count that the producing thread may be changing too, e.g. a captured object's.)
            let run = (base + index).move().run
            run()
            index += 1
        }
        if ran < count {
            base.moveInitialize(from: base + ran, count: count - ran)
        }
        count -= ran
        return ran
    }

    /// Releases every job without running it.
    mutating func removeAll() {
        base.deinitialize(count: count)
        count = 0
    }

    private mutating func grow(to newCapacity: Int) {
        let newBase = UnsafeMutablePointer<Job>.allocate(capacity: newCapacity)
        newBase.moveInitialize(from: base, count: count)
        if capacity > 0 { base.deallocate() }
        base = newBase
        capacity = newCapacity
    }
}
