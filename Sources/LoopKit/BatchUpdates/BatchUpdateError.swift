/// Why a ``SectionedDataSource`` refused to commit changes.
///
/// Every refusal leaves the data source's model and the target untouched. Each case's ``description``
/// says what went wrong and what to do instead.
///
/// A value: safe to use from any thread.
public enum BatchUpdateError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The call must be made on the data source's loop thread and was made elsewhere.
    case wrongThread(operation: String)
    /// The changes were computed against revision `computedAgainst` of the model, which has since been
    /// committed to (it is at `current`): applying them would corrupt it.
    case staleChanges(computedAgainst: UInt64, current: UInt64)
    /// Changes of submit `generation` arrived after those of a newer submit (`lastCommitted`) were
    /// committed: commits apply in submit order.
    case outOfOrder(generation: UInt64, lastCommitted: UInt64)
    /// The changes were delivered by another data source.
    case foreignChanges
    /// `commit` was called from inside a commit (from the target's own callbacks).
    case reentrantCommit

    /// The error as a sentence, with what to do instead.
    public var description: String {
        switch self {
        case .wrongThread(let operation):
            "\(operation) must be called on the data source's loop thread; reach it with the loop's invoke or enqueue"
        case .staleChanges(let computedAgainst, let current):
            "the changes were computed against model revision \(computedAgainst), but the model is at revision \(current); commit the changes delivered after that revision instead (the data source re-diffs the newest submit by itself)"
        case .outOfOrder(let generation, let lastCommitted):
            "the changes of submit \(generation) are older than the committed changes of submit \(lastCommitted); commits apply in submit order"
        case .foreignChanges:
            "the changes were delivered by another data source"
        case .reentrantCommit:
            "commit was called from inside a commit; commit again after the current one returns"
        }
    }
}
