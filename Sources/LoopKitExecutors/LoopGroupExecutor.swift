@_spi(ExperimentalScheduling) import _Concurrency
import LoopKit

/// Swift's default executor on a ``LoopKit/LoopGroup``: jobs go to one queue the group's loops share
/// (``LoopKit/SharedJobQueue``: the loop that queued a job takes it, a second loop helps when jobs wait) and
/// run in a loop's drain with this executor (not the loop) as their task executor, so that Swift sees a
/// task with no preference running where it should and switches between such tasks without queueing them
/// again. It takes delayed jobs (`Task.sleep` of such a task) on the next loop's timers.
///
/// Safe from any thread.
final class LoopGroupExecutor: TaskExecutor, SchedulingExecutor {
    let group: LoopGroup
    private let jobs: SharedJobQueue

    init(_ group: LoopGroup) {
        self.group = group
        jobs = SharedJobQueue(loops: group.loops)
    }

    func enqueue(_ job: consuming ExecutorJob) {
        jobs.push(UnownedJob(job), runningOn: asUnownedTaskExecutor())
    }

    func enqueue<C: Clock>(_ job: consuming ExecutorJob, after delay: C.Duration, tolerance: C.Duration?, clock: C) {
        let job = UnownedJob(job)
        let loop = group.next()
        let executor = asUnownedTaskExecutor()
        do {
            // The delayed job runs in the timer's callback: what it resumes runs in that iteration's drain.
            try loop.schedule(after: EventLoop.loopDuration(delay, of: C.self),
                              whenDropped: { globalConcurrentExecutor.enqueue(ExecutorJob(job)) }) {
                job.runSynchronously(on: executor)
            }
        } catch {
            globalConcurrentExecutor.enqueue(ExecutorJob(job))  // the loop has shut down
        }
    }
}
