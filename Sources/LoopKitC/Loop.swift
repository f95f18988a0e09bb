import CLoopKit
import LoopKit

// Creating, driving, stopping and freeing loops from C.

@c @implementation
public func lk_loop_create(_ out: UnsafeMutablePointer<OpaquePointer?>!) -> Int32 {
    guard let out else { return Status.invalid }
    return Status.run { () throws(EventLoopError) in
        Handles.store(Handles.retain(try EventLoop()), in: out)
    }
}

@c @implementation
public func lk_loop_attach(_ base: OpaquePointer!, _ out: UnsafeMutablePointer<OpaquePointer?>!) -> Int32 {
    guard let base, let out else { return Status.invalid }
    return Status.run { () throws(EventLoopError) in
        Handles.store(Handles.retain(try EventLoop(attachingTo: base)), in: out)
    }
}

@c @implementation
public func lk_loop_destroy(_ handle: OpaquePointer!) -> Int32 {
    guard let loop = Handles.borrow(handle, as: EventLoop.self) else { return Status.invalid }
    guard loop.isCurrent else { return Status.wrongThread }
    guard !loop.isInIteration else { return Status.busy }
    loop.shutdown()
    Handles.release(handle, as: EventLoop.self)
    return Status.ok
}

@c @implementation
public func lk_loop_run(_ handle: OpaquePointer!) -> Int32 {
    guard let loop = Handles.borrow(handle, as: EventLoop.self) else { return Status.invalid }
    return Status.run { () throws(EventLoopError) in try loop.run() }
}

@c @implementation
public func lk_loop_run_once(_ handle: OpaquePointer!, _ mayBlock: Int32) -> Int32 {
    guard let loop = Handles.borrow(handle, as: EventLoop.self) else { return Status.invalid }
    do {
        return Int32(clamping: try loop.runOnce(blocking: mayBlock != 0))
    } catch {
        return Status.of(error)
    }
}

@c @implementation
public func lk_loop_stop(_ handle: OpaquePointer!) -> Int32 {
    guard let loop = Handles.borrow(handle, as: EventLoop.self) else { return Status.invalid }
    loop.stop()
    return Status.ok
}

@c @implementation
public func lk_loop_shutdown(_ handle: OpaquePointer!) -> Int32 {
    guard let loop = Handles.borrow(handle, as: EventLoop.self) else { return Status.invalid }
    loop.shutdown()
    return Status.ok
}

@c @implementation
public func lk_loop_iteration(_ handle: OpaquePointer!) -> UInt64 {
    Handles.borrow(handle, as: EventLoop.self)?.iteration ?? 0
}

@c @implementation
public func lk_loop_is_current(_ handle: OpaquePointer!) -> Int32 {
    Handles.borrow(handle, as: EventLoop.self)?.isCurrent == true ? 1 : 0
}

@c @implementation
public func lk_loop_event_base(_ handle: OpaquePointer!) -> OpaquePointer! {
    Handles.borrow(handle, as: EventLoop.self)?.eventBase
}
