import CLoopKit
import LoopKit

// The work pool: lk_work_pool_* and lk_work_queue/lk_work_cancel over WorkPool and EventLoop.offload.

@c @implementation
public func lk_work_pool_create(_ threads: Int, _ queueLimit: Int, _ out: UnsafeMutablePointer<OpaquePointer?>!) -> Int32 {
    guard let out, threads > 0, queueLimit > 0 else { return Status.invalid }
    do throws(WorkPoolError) {
        let pool = try WorkPool(threads: threads, queueLimit: queueLimit, name: "LoopKit C pool")
        Handles.store(Handles.retain(pool), in: out)
        return Status.ok
    } catch {
        return Status.of(error)
    }
}

@c @implementation
public func lk_work_pool_shutdown(_ handle: OpaquePointer!) -> Int32 {
    guard let pool = Handles.borrow(handle, as: WorkPool.self) else { return Status.invalid }
    pool.shutdown()
    return Status.ok
}

@c @implementation
public func lk_work_pool_destroy(_ handle: OpaquePointer!) -> Int32 {
    guard let handle, let pool = Handles.borrow(handle, as: WorkPool.self) else { return Status.invalid }
    pool.shutdown()
    pool.waitUntilIdle()
    Handles.release(handle, as: WorkPool.self)
    return Status.ok
}

@c @implementation
public func lk_work_pool_get_info(_ handle: OpaquePointer!, _ out: UnsafeMutablePointer<lk_work_pool_info>!) -> Int32 {
    guard let out else { return Status.invalid }
    let pool = Handles.borrow(handle, as: WorkPool.self) ?? .shared
    out.pointee = lk_work_pool_info(
        threads: pool.threadCount, queue_limit: pool.queueLimit, queued: pool.queuedCount,
        active: pool.activeCount, completed: pool.completedCount)
    return Status.ok
}

@c @implementation
public func lk_work_queue(
    _ loopHandle: OpaquePointer!, _ poolHandle: OpaquePointer!, _ work: lk_fn!, _ after: lk_after_work_fn!,
    _ ctx: UnsafeMutableRawPointer!, _ out: UnsafeMutablePointer<OpaquePointer?>!
) -> Int32 {
    guard let loop = Handles.borrow(loopHandle, as: EventLoop.self), let work else { return Status.invalid }
    let pool = Handles.borrow(poolHandle, as: WorkPool.self) ?? .shared
    let context = Context(ctx)
    let slot = WorkHandleSlot()
    do {
        let offloaded = try loop.offload(to: pool, { work(context.pointer) }) { result in
            let status: Int32
            switch result {
            case .success: status = Status.ok
            case .failure: status = Status.cancelled  // cancelled, the pool or the loop shut down first
            }
            after?(context.pointer, status)
            slot.release()
        }
        if let out { Handles.store(slot.hold(offloaded), in: out) }
        return Status.ok
    } catch {
        return Status.of(error)
    }
}

@c @implementation
public func lk_work_cancel(_ handle: OpaquePointer!) -> Int32 {
    guard let work = Handles.borrow(handle, as: OffloadedWork.self) else { return Status.invalid }
    return work.cancel() ? Status.ok : Status.busy
}
