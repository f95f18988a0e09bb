/// A value bound to an event loop: any thread reaches it, but only through the loop.
///
/// The value (often not `Sendable`, such as a view model or
/// a parser's state) lives on the loop's thread, and other threads send it closures.
///
/// ```swift
/// let table = LoopBound(TableModel(), on: loop)
/// try table.invoke { $0.setEditing(true) }                   // inline on the loop thread, else queued
/// try table.enqueue { $0.insertRows(at: paths) }             // the loop's next iteration
/// let count = try table.invokeAndWait { $0.rows.count }      // any thread; waits for the loop
/// table.value.rows.removeAll()                               // direct access: loop thread only
/// ```
///
/// Direct access through ``value`` and ``withValue(_:)`` is allowed on the loop's thread only; from any
/// other thread it stops the process with a message (a precondition, checked in release builds too).
/// The closures given to ``invoke(_:)``, ``enqueue(_:)`` and ``invokeAndWait(_:)`` are `@Sendable`, so a
/// non-`Sendable` value cannot escape the loop through them.
///
/// Safe from any thread (the handle); the value itself only on the loop thread.
public final class LoopBound<Value>: Sendable {
    /// The loop the value is bound to. Safe from any thread.
    public let loop: EventLoop
    /// The value, touched only on the loop's thread.
    @usableFromInline let storage: LoopConfined<Value>

    /// Binds `value` to `loop`.
    ///
    /// The value is sent to the loop: the caller cannot use it afterwards (it is `sending`), so this is
    /// safe from any thread even for a non-`Sendable` value.
    ///
    /// - Parameters:
    ///   - value: The value to bind.
    ///   - loop: The loop whose thread owns the value from now on.
    ///
    /// Safe from any thread.
    public init(_ value: sending Value, on loop: EventLoop) {
        self.loop = loop
        storage = LoopConfined(value, owner: loop.owner)
    }

    /// The value, read and written directly.
    ///
    /// Stops the process (a precondition failure) when used off the loop's thread: reach the value from
    /// a task on another thread or loop with ``perform(_:)``, from a callback with ``invoke(_:)`` or
    /// ``enqueue(_:)``; ``invokeAndWait(_:)`` blocks the caller, another loop's thread included.
    ///
    /// Call on the loop thread.
    ///
    /// Inlinable, so that a read from another module is a thread check and a field access rather than
    /// a call into an unspecialised coroutine (which allocated its frame on every access).
    @inlinable
    public var value: Value {
        _read {
            checkThread("value")
            yield storage.value
        }
        _modify {
            checkThread("value")
            yield &storage.value
        }
    }

    /// Runs `body` with the value, in place, and returns what it returns.
    ///
    /// Stops the process (a precondition failure) when called off the loop's thread. Do not call
    /// ``invoke(_:)`` or touch ``value`` from inside `body`: that is an overlapping access.
    ///
    /// - Parameter body: Reads or changes the value.
    /// - Returns: What `body` returned.
    /// - Throws: What `body` threw.
    ///
    /// Call on the loop thread.
    public func withValue<Result, Failure: Error>(
        _ body: (inout Value) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        checkThread("withValue(_:)")
        return try body(&storage.value)
    }

    /// Runs `body` with the value now on the loop's thread; from any other thread, queues it (rule R5).
    ///
    /// Off the loop's thread it does not wait for `body` to run.
    ///
    /// - Parameter body: Reads or changes the value, on the loop thread.
    /// - Throws: ``EventLoopError/shutDown`` once the loop refuses work; `body` is not kept.
    ///
    /// Safe from any thread.
    public func invoke(_ body: @escaping @Sendable (inout Value) -> Void) throws(EventLoopError) {
        let storage = storage
        try loop.invoke { body(&storage.value) }
    }

    /// Queues `body` to run with the value in the loop's next drain, from any thread (R1–R3): the
    /// running iteration's when called from an I/O or timer callback, the next iteration's when called
    /// from queued work.
    ///
    /// Useful for work that can wait until the loop has handled
    /// what is pending, even when the caller is on the loop thread.
    ///
    /// - Parameter body: Reads or changes the value, on the loop thread.
    /// - Throws: ``EventLoopError/shutDown`` once the loop refuses work; `body` is not kept.
    ///
    /// Safe from any thread.
    public func enqueue(_ body: @escaping @Sendable (inout Value) -> Void) throws(EventLoopError) {
        let storage = storage
        try loop.enqueue { body(&storage.value) }
    }

    /// Runs `body` with the value on the loop and returns its result, waiting for it off the loop (R6).
    ///
    /// On the loop's thread `body` runs inline, so this never deadlocks there; from another thread the
    /// caller blocks until the loop ran `body` (FIFO with other queued work).
    ///
    /// - Parameter body: Reads or changes the value, on the loop thread.
    /// - Returns: What `body` returned.
    /// - Throws: What `body` threw; ``EventLoopError/shutDown`` when the loop refuses work;
    ///   ``EventLoopError/cancelled`` when it shut down before running `body`.
    ///
    /// Safe from any thread. Do not call it from another loop's thread while that loop must stay responsive.
    public func invokeAndWait<Result: Sendable>(
        _ body: @escaping @Sendable (inout Value) throws -> Result
    ) throws -> Result {
        let storage = storage
        return try loop.invokeAndWait { try body(&storage.value) }
    }

    /// Runs `body` with the value on the loop and returns its result to the awaiting task.
    ///
    /// The `async` form of ``invokeAndWait(_:)``: inline on the loop's thread, otherwise queued; the task
    /// suspends instead of blocking its thread.
    ///
    /// - Parameter body: Reads or changes the value, on the loop thread.
    /// - Returns: What `body` returned.
    /// - Throws: As ``invokeAndWait(_:)``.
    ///
    /// Safe from any thread or task.
    public func perform<Result: Sendable>(
        _ body: @escaping @Sendable (inout Value) throws -> Result
    ) async throws -> Result {
        let storage = storage
        return try await loop.perform { try body(&storage.value) }
    }

    /// Stops the process unless the caller is on the loop's thread.
    @inlinable @inline(__always)
    func checkThread(_ member: StaticString) {
        precondition(loop.isCurrent,
                     "LoopKit: LoopBound.\(member) used off its loop's thread (a handler on another loop of a group?); from a task, reach the value with `try await bound.perform { }`; from a callback, with invoke or enqueue; state every loop shares belongs in an actor or one LoopBound reached with perform (invokeAndWait blocks the calling loop)")
    }
}
