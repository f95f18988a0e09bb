/// A unit of queued work: a closure, or a Swift concurrency job kept as it is (no closure around it, so
/// resuming a task on the loop allocates nothing). 17 bytes, so queuing copies three words.
///
/// A struct around an enum, not a bare function type, on purpose: a function type stored through a
/// generic pointer is kept at its most general abstraction, so every store would allocate a
/// reabstraction thunk. An enum payload keeps the closure as it is.
struct Job: Sendable {
    private enum Work: Sendable {
        /// Work queued with ``EventLoop/enqueue(_:)`` and its kin.
        case closure(@Sendable () -> Void)
        /// A job of a task that prefers the loop (the loop as its task executor).
        case task(UnownedJob)
        /// A job of an actor pinned to the loop (the loop's serial executor, ``LoopIsolation``).
        case isolatedTask(UnownedJob)
    }

    private let work: Work

    @inline(__always)
    init(_ run: @escaping @Sendable () -> Void) { work = .closure(run) }

    /// A Swift concurrency job; `isolated` when an actor pinned to the loop enqueued it.
    @inline(__always)
    init(task: UnownedJob, isolated: Bool) { work = isolated ? .isolatedTask(task) : .task(task) }

    /// Runs the work on `loop`, the loop that drains it.
    @inline(__always)
    func run(on loop: EventLoop) {
        switch work {
        case .closure(let run):
            run()
        case .task(let job):
            job.runSynchronously(on: loop.asUnownedTaskExecutor())
        case .isolatedTask(let job):
            job.runSynchronously(isolatedTo: loop.isolation.asUnownedSerialExecutor(), taskExecutor: loop.asUnownedTaskExecutor())
        }
    }
}

/// A FIFO of jobs in one contiguous allocation that a drain empties by moving each job out.
///
/// `Array` would retain, release and destroy every job on the way through; moving costs one release.
/// The buffer's storage is reused from drain to drain, so a steady-state enqueue never allocates
/// (no allocation per enqueue beyond a closure's own; none for a Swift concurrency job).
///
/// The unchecked conformance stands for unique ownership: the buffer is noncopyable, so exactly one
/// owner can reach its storage, and every element is a `@Sendable` closure or a Swift concurrency job
/// (`UnownedJob`, `Sendable`). Moving a buffer between threads (through the loop's lock) is therefore
/// as safe as moving an array of them.
struct JobBuffer: ~Copyable, @unchecked Sendable {
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
    mutating func append(_ job: __owned Job) {
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

    /// Runs the first `limit` jobs in order on `loop`, moving each out before it runs, and keeps the
    /// rest (in order) at the front. Returns how many ran.
    @inline(__always)
    mutating func runFront(limit: Int, on loop: EventLoop) -> Int {
        let ran = min(limit, count)
        var index = 0
        while index < ran {
            let job = (base + index).move()
            job.run(on: loop)
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
