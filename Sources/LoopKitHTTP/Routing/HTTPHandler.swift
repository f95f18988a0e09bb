/// What runs for a route: synchronously on the loop thread, or as a task on the loop's executor.
public enum HTTPHandler: Sendable {
    /// Runs on the connection's loop thread and returns the response at once: the fastest form.
    case sync(@Sendable (HTTPServerRequest) throws -> HTTPServerResponse)
    /// Runs as a `Task` whose executor preference is the connection's loop: it starts on the loop thread
    /// (no hop) and may await, for example `loop.process(…)`.
    case async(@Sendable (HTTPServerRequest) async throws -> HTTPServerResponse)
}
