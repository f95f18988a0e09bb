extension SectionedDataSource {
    /// Commits delivered changes: performs their stages on `target`, updating the model inside each batch.
    ///
    /// For each stage the model becomes the stage's sections first thing inside the target's
    /// ``BatchUpdateTarget/performBatchUpdates(_:)``, then the target gets the stage's data and
    /// operations. Afterwards the model is ``Changes/sections`` and ``revision`` is one higher. Should
    /// newer changes have been delivered against the old model in the meantime, the newest submit is
    /// diffed again and delivered anew.
    ///
    /// - Parameters:
    ///   - changes: Changes this data source delivered.
    ///   - target: The view (or test double) to perform the stages on.
    /// - Throws: ``BatchUpdateError/staleChanges(computedAgainst:current:)`` when the model was
    ///   committed to since the changes were computed; ``BatchUpdateError/outOfOrder(generation:lastCommitted:)``
    ///   when newer changes were committed already; ``BatchUpdateError/foreignChanges``,
    ///   ``BatchUpdateError/reentrantCommit`` and ``BatchUpdateError/wrongThread(operation:)``. A
    ///   refused commit touches neither the model nor the target.
    ///
    /// Call on the loop thread.
    public func commit<Target: BatchUpdateTarget>(
        _ changes: Changes, to target: Target
    ) throws(BatchUpdateError) where Target.Model == Model, Target.Item == Item {
        guard loop.isCurrent else { throw .wrongThread(operation: "commit(_:to:)") }
        guard changes.source == ObjectIdentifier(core) else { throw .foreignChanges }
        let state = core.state
        guard !state.value.isCommitting else { throw .reentrantCommit }
        let lastCommitted = state.value.committedGeneration
        guard changes.generation > lastCommitted else {
            throw .outOfOrder(generation: changes.generation, lastCommitted: lastCommitted)
        }
        let revision = state.value.revision
        guard changes.baseRevision == revision else {
            throw .staleChanges(computedAgainst: changes.baseRevision, current: revision)
        }

        state.value.isCommitting = true
        for stage in changes.stages {
            target.perform(stage, updatingData: { state.value.sections = stage.sections })
        }
        state.value.sections = changes.sections
        state.value.revision = revision + 1
        state.value.committedGeneration = changes.generation
        state.value.isCommitting = false
        core.didCommit(changes.sections, revision: revision + 1, generation: changes.generation)
    }
}
