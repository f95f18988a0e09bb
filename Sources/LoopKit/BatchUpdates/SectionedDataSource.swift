/// Sectioned data bound to a loop: diffs each new version off the loop and commits it as batch updates
/// on it.
///
/// The data source holds the model a table or list shows: ``sections``, changed only by
/// ``commit(_:to:)``, inside the target's batch. New data goes in with ``submit(_:)`` from any thread;
/// a worker loop of a ``LoopGroup`` diffs it against the model, and the ``Changes`` come back on the
/// loop, to the handler set with ``onChanges(_:)`` and to every ``changes(bufferingPolicy:)`` stream.
///
/// ```swift
/// let source = try SectionedDataSource<Header, Row>(on: loop, diffingOn: workers)
/// try source.onChanges { [weak source] changes in
///     do {
///         try source?.commit(changes, to: table)
///     } catch {
///         print("changes not applied: \(error)")   // a BatchUpdateError says why
///     }
/// }
/// try source.submit(newSections)            // any thread
/// ```
///
/// The rules it keeps:
/// - **Off the loop.** Diffing (and splitting into stages) runs on the worker, never on the loop.
/// - **Newest wins.** Each submit has a generation; when a newer submit arrives before an older one's
///   changes are delivered, the older ones are dropped (on the worker when possible, at the latest on
///   the loop before delivery). Deliveries arrive on the loop thread in submit order.
/// - **Never stale.** Changes carry the model revision they were computed against. If the model was
///   committed to since, the data source diffs the newest submit again instead of delivering them, and
///   ``commit(_:to:)`` refuses stale or out-of-order changes with a ``BatchUpdateError``; the model
///   is never corrupted.
///
/// The data source keeps its handler: capture the data source weakly in it.
public final class SectionedDataSource<Model: Diffable & Sendable, Item: Diffable & Sendable>: Sendable
where Model.DiffID: Sendable, Item.DiffID: Sendable {
    /// A section of the data.
    ///
    /// Safe from any thread.
    public typealias Section = DiffSection<Model, Item>

    /// The loop the model lives on: deliveries and commits happen on its thread.
    ///
    /// Safe from any thread.
    public let loop: EventLoop
    /// Everything the worker and the loop share; worker jobs hold it, never the data source itself.
    let core: Core
    /// The group the data source started for itself when none was given (kept alive for the worker).
    private let ownedWorkers: LoopGroup?

    /// Creates a data source holding `sections`, delivering on `loop` and diffing on a worker loop.
    ///
    /// - Parameters:
    ///   - sections: The initial model (revision 0).
    ///   - loop: The loop whose thread owns the model.
    ///   - workers: The group to take the worker loop from (a loop other than `loop`). Nil starts a
    ///     group of one thread owned by the data source and shut down with it.
    ///   - reloadThreshold: Passed to ``SectionedDiff/init(from:to:reloadThreshold:)``: above this many
    ///     changes a delivery is one reload stage. Nil never reloads.
    /// - Throws: ``EventLoopError/invalidArgument(_:)`` when `workers` holds only `loop`; what
    ///   ``LoopGroup/init(threads:name:)`` throws when the data source starts its own worker.
    ///
    /// Safe from any thread.
    public init(
        _ sections: [Section] = [], on loop: EventLoop, diffingOn workers: LoopGroup? = nil,
        reloadThreshold: Int? = nil
    ) throws(EventLoopError) {
        let group: LoopGroup
        if let workers {
            group = workers
            ownedWorkers = nil
        } else {
            group = try LoopGroup(threads: 1, name: "loopkit-diff")
            ownedWorkers = group
        }
        var worker = group.next()
        for _ in group.loops.indices where worker === loop { worker = group.next() }
        guard worker !== loop else {
            throw .invalidArgument("the diff worker must be another loop than the data source's own")
        }
        self.loop = loop
        core = Core(sections, loop: loop, worker: worker, reloadThreshold: reloadThreshold)
    }

    deinit {
        core.close()
    }

    // MARK: Submitting

    /// Diffs `sections` against the model on the worker, then delivers the ``Changes`` on the loop.
    ///
    /// The model does not change until the changes are committed. A newer submit makes this one's
    /// changes stale: they are dropped unless already delivered.
    ///
    /// - Parameter sections: The new data.
    /// - Returns: The submit's generation (1 for the first), as ``Changes/generation`` will carry it.
    /// - Throws: ``EventLoopError/shutDown`` when the worker loop has shut down. The submit still
    ///   counts as the newest: changes of earlier submits that are not delivered yet are dropped.
    ///
    /// Safe from any thread.
    @discardableResult
    public func submit(_ sections: [Section]) throws(EventLoopError) -> UInt64 {
        let generation = core.latestGeneration.add(1, ordering: .acquiringAndReleasing).newValue
        try core.requestDiff(generation: generation, to: sections)
        return generation
    }

    // MARK: The model

    /// The model: the sections as of the last commit (inside a commit's batch, the stage's sections).
    ///
    /// Call on the loop thread (checked: the process stops otherwise).
    public var sections: [Section] {
        precondition(loop.isCurrent, "LoopKit: SectionedDataSource.sections read off its loop thread")
        return core.state.value.sections
    }

    /// The number of commits so far: the model revision that new ``Changes`` are computed against.
    ///
    /// Call on the loop thread (checked: the process stops otherwise).
    public var revision: UInt64 {
        precondition(loop.isCurrent, "LoopKit: SectionedDataSource.revision read off its loop thread")
        return core.state.value.revision
    }

    // MARK: Deliveries

    /// Sets the handler that receives each delivery of ``Changes``, on the loop thread, in submit order.
    ///
    /// Replaces the previous handler; nil removes it. The handler may call ``commit(_:to:)`` directly.
    /// The data source keeps the handler: capture the data source weakly.
    ///
    /// - Throws: ``BatchUpdateError/wrongThread(operation:)`` off the loop thread.
    ///
    /// Call on the loop thread.
    public func onChanges(_ handler: ((Changes) -> Void)?) throws(BatchUpdateError) {
        guard loop.isCurrent else { throw .wrongThread(operation: "onChanges(_:)") }
        core.state.value.handler = handler
    }

    /// Sets the handler told about failures that have no caller to throw to: the diff worker refusing to
    /// diff a submit again after a commit made its changes stale (the worker loop has shut down). After
    /// such a failure nothing more is delivered and every ``changes(bufferingPolicy:)`` stream finishes.
    ///
    /// Replaces the previous handler; nil removes it. The handler runs on the loop thread.
    ///
    /// - Parameter handler: Receives a sentence describing the failure.
    /// - Throws: ``BatchUpdateError/wrongThread(operation:)`` off the loop thread.
    ///
    /// Call on the loop thread.
    public func onDiagnostic(_ handler: ((String) -> Void)?) throws(BatchUpdateError) {
        guard loop.isCurrent else { throw .wrongThread(operation: "onDiagnostic(_:)") }
        core.state.value.diagnostic = handler
    }

    /// A stream of the deliveries made from now on, in submit order.
    ///
    /// By default it keeps only the newest undelivered ``Changes``: each delivery is a diff from the
    /// model, so a slow consumer should commit the newest and may skip the others. The stream finishes
    /// when the data source is released, when its loop has shut down (nothing can be delivered any more),
    /// or when its diff worker refuses work (see ``onDiagnostic(_:)``).
    ///
    /// - Parameter bufferingPolicy: What the stream keeps while its consumer is busy.
    /// - Returns: A stream of ``Changes``.
    ///
    /// Safe from any thread; deliveries are yielded on the loop thread.
    public func changes(
        bufferingPolicy: AsyncStream<Changes>.Continuation.BufferingPolicy = .bufferingNewest(1)
    ) -> AsyncStream<Changes> {
        let (stream, continuation) = AsyncStream.makeStream(of: Changes.self, bufferingPolicy: bufferingPolicy)
        core.subscribe(continuation)
        return stream
    }
}
