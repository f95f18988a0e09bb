import CLoopKit
import LoopKit

// Array processing from C: ArrayProcessor over the indices 0 ..< count.

@c @implementation
public func lk_process(
    _ handle: OpaquePointer!, _ count: Int, _ budget: UInt64,
    _ each: (@convention(c) (UnsafeMutableRawPointer?, Int) -> Void)!,
    _ update: (@convention(c) (UnsafeMutableRawPointer?, Int, Int) -> Void)!,
    _ complete: (@convention(c) (UnsafeMutableRawPointer?, Int32) -> Void)!,
    _ ctx: UnsafeMutableRawPointer!, _ out: UnsafeMutablePointer<OpaquePointer?>!
) -> Int32 {
    guard let loop = Handles.borrow(handle, as: EventLoop.self), let each, count >= 0 else { return Status.invalid }
    let context = Context(ctx)
    // The handle given to C is released after `complete` returns; the job never completes before
    // `process` returns, so the handle is stored by then.
    let jobHandle = Lock<UInt>(0)  // the handle's address; 0 while there is none
    do {
        let job = try loop.process(
            0..<count, budget: ProcessingBudget(nanoseconds: budget),
            each: { index in each(context.pointer, index) },
            update: { done, total in update?(context.pointer, done, total) },
            completion: { outcome in
                complete?(context.pointer, outcome.isSuccess ? Status.ok : Status.cancelled)
                if let handle = OpaquePointer(bitPattern: jobHandle.withLock { $0 }) {
                    Handles.release(handle, as: ProcessingJob.self)
                }
            })
        if let out {
            let retained = Handles.retain(job)
            jobHandle.withLock { $0 = UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(retained))) }
            Handles.store(retained, in: out)
        }
        return Status.ok
    } catch {
        return Status.of(error)
    }
}

@c @implementation
public func lk_job_cancel(_ handle: OpaquePointer!) -> Int32 {
    guard let job = Handles.borrow(handle, as: ProcessingJob.self) else { return Status.invalid }
    job.cancel()
    return Status.ok
}
