import CLoopKit
import LoopKit

// Queuing and invoking C callbacks on a loop.

@c @implementation
public func lk_loop_enqueue(_ handle: OpaquePointer!, _ fn: lk_fn!, _ ctx: UnsafeMutableRawPointer!) -> Int32 {
    guard let loop = Handles.borrow(handle, as: EventLoop.self), let fn else { return Status.invalid }
    let context = Context(ctx)
    return Status.run { () throws(EventLoopError) in try loop.enqueue { fn(context.pointer) } }
}

@c @implementation
public func lk_loop_invoke(_ handle: OpaquePointer!, _ fn: lk_fn!, _ ctx: UnsafeMutableRawPointer!) -> Int32 {
    guard let loop = Handles.borrow(handle, as: EventLoop.self), let fn else { return Status.invalid }
    let context = Context(ctx)
    return Status.run { () throws(EventLoopError) in try loop.invoke { fn(context.pointer) } }
}

@c @implementation
public func lk_loop_invoke_wait(_ handle: OpaquePointer!, _ fn: lk_fn!, _ ctx: UnsafeMutableRawPointer!) -> Int32 {
    guard let loop = Handles.borrow(handle, as: EventLoop.self), let fn else { return Status.invalid }
    let context = Context(ctx)
    do {
        try loop.invokeAndWait { fn(context.pointer) }
        return Status.ok
    } catch {
        return Status.of(error)
    }
}
