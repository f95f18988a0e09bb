import LoopKit
import Synchronization

/// The jobs of `LoopDemo serve`'s live page: `/work`-style jobs (about 1 µs per item, processed on the
/// loop within a 1 ms budget per iteration) started by `POST /jobs`, watched through
/// `GET /jobs/ID/events` (server-sent events) or `GET /ws/jobs/ID` (WebSocket), cancelled by
/// `POST /jobs/ID/cancel`.
///
/// Safe from any thread: the table is behind a `Mutex`; each job runs on the loop of the request that
/// started it and is cancelled from any thread.
public final class DemoJobs: Sendable {
    /// The most jobs remembered; the oldest finished ones are forgotten first.
    public static let capacity = 64

    private let table = Mutex<(next: Int, jobs: [(id: Int, job: ProcessingJob)])>((1, []))

    public init() {}

    /// Starts a job of `items` items on `loop` (the caller is on its thread); returns its id.
    ///
    /// - Throws: `EventLoopError` when the loop refuses work.
    public func start(items: Int, work: SyntheticWork, on loop: EventLoop) throws -> Int {
        let sink = LoopBound(UInt64(0), on: loop)  // keeps the work's result observable
        let job = try loop.process(0..<items, budget: DemoRoutes.workBudget, each: { item in sink.value &+= work(item) },
                                   completion: { _ in })
        return table.withLock { table in
            let id = table.next
            table.next += 1
            table.jobs.append((id, job))
            while table.jobs.count > Self.capacity {
                let index = table.jobs.firstIndex { $0.job.isFinished } ?? 0
                table.jobs.remove(at: index)
            }
            return id
        }
    }

    /// The job with this id, if it is remembered.
    public func job(_ id: Int) -> ProcessingJob? {
        table.withLock { table in table.jobs.first { $0.id == id }?.job }
    }
}
