extension SectionedDataSource {
    /// The changes from the data source's model to the sections of one ``submit(_:)``, ready to commit.
    ///
    /// Delivered on the data source's loop thread; commit them with ``commit(_:to:)``. A value, safe to
    /// pass to any thread (committing is done on the loop thread).
    public struct Changes: Sendable {
        /// The number of the ``submit(_:)`` these changes lead to; the first submit is 1.
        public let generation: UInt64
        /// The model ``revision`` the diff was computed against: the changes apply only while the model
        /// is still at this revision.
        public let baseRevision: UInt64
        /// The diff from the model at ``baseRevision`` to the submitted sections.
        public let diff: SectionedDiff<Model, Item>
        /// The diff's batch stages, in the order a target performs them (computed off the loop).
        public let stages: [BatchStage<Model, Item>]
        /// Identifies the data source that delivered the changes.
        let source: ObjectIdentifier

        /// The submitted sections: the model after ``commit(_:to:)``.
        public var sections: [Section] { diff.new }

        /// Whether committing changes nothing but the revision.
        public var isEmpty: Bool { diff.isEmpty }
    }
}
