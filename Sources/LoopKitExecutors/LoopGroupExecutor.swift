import LoopKit

/// Swift's default executor on a ``LoopKit/LoopGroup``: each job goes to the group's next loop, round
/// robin, and runs in that loop's drain with the loop as its task executor.
///
/// Safe from any thread.
final class LoopGroupExecutor: TaskExecutor {
    let group: LoopGroup

    init(_ group: LoopGroup) { self.group = group }

    func enqueue(_ job: consuming ExecutorJob) {
        group.next().enqueue(job)
    }
}
