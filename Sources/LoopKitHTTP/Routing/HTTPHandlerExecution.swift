/// The marker a route passes to run its handler as a task: `router.get("/report", .inTask) { … }`.
///
/// A route's handler runs one of two ways, and the call site says which:
///
/// - **Inline** (`router.get("/hello") { _ in .text("Hello") }`, or with ``HTTPInlineExecution/inline``
///   spelt out): a synchronous closure, called on the connection's loop thread inside the read callback
///   that parsed the request. No task, no allocation: the fastest form. It must not block.
/// - **In a task** (`router.get("/report", .inTask) { request in try await build(request) }`): an async
///   closure, run as a `Task` whose executor preference is the connection's loop (it starts there, with no
///   hop), after the body has been collected; the connection is not read while it runs.
///
/// The marker exists because the closure alone does not show the difference: one `await` inside it makes
/// Swift pick the async overload, which would move the handler into a task and pause the connection's
/// reads. The async forms without the marker still compile, for source compatibility, but are deprecated:
/// adding an `await` to an inline route is a warning that names the fix, never a silent change.
///
/// Middleware can move an inline route into a task, never the other way: behind an ``HTTPAsyncMiddleware``
/// (or `router.use { request, next in … }`) every route runs in a task, its handler called from there.
///
/// A type with one value, so that `.inline` cannot be passed where a task is meant, nor `.inTask` where an
/// inline handler is. A plain value: use it on any thread.
public enum HTTPTaskExecution: Sendable, Hashable {
    /// The handler runs as a task on the connection's loop, after the body has been collected.
    case inTask
}

/// The marker a route may pass to say that its handler runs inline on the loop thread:
/// `router.get("/hello", .inline) { _ in .text("Hello") }`, the same as `router.get("/hello") { … }`.
///
/// See ``HTTPTaskExecution`` for the two ways a handler runs. A plain value: use it on any thread.
public enum HTTPInlineExecution: Sendable, Hashable {
    /// The handler runs on the connection's loop thread, inside the read callback that parsed the
    /// request: no task, no allocation.
    case inline
}
