import HTTPTypes
import LoopKit

extension HTTPServerResponse {
    /// A `text/event-stream` response (server-sent events) written by `write`.
    ///
    /// `write` runs as a task on the connection's loop and sends events with backpressure. The stream
    /// ends when `write` returns (the response ends and the connection can serve its next request) or
    /// throws (the connection is aborted). The connection keeps watching the client while the stream is
    /// open: when the client disconnects, the task is cancelled, so a `write` waiting for its next event
    /// (an `AsyncStream`, a `Task.sleep`) ends at once rather than at its next send.
    ///
    /// When the server's graceful shutdown begins, an open stream does not hold it: its task is cancelled,
    /// and whether `write` then returns or throws the cancellation, the chunked body is terminated and the
    /// connection closed, so a client's `EventSource` reconnects (to another instance) at once. Inside
    /// `write`, as in every handler's task, swift-service-lifecycle's `withGracefulShutdownHandler`,
    /// `cancelOnGracefulShutdown()` and `Task.isShuttingDownGracefully` answer to the server's shutdown.
    ///
    /// ```swift
    /// router.get("/clock") { _ in
    ///     .events { events in
    ///         while true {
    ///             try await events.send(ServerSentEvent(data: "\(ContinuousClock.now)"))
    ///             try await Task.sleep(for: .seconds(1))
    ///         }
    ///     }
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - keepAlive: When nothing has been written for this long, a comment line goes out, so that
    ///     proxies keep the connection and a vanished client is noticed; nil for none. Default 15 s.
    ///   - write: Sends the events.
    /// - Returns: A 200 response with `Content-Type: text/event-stream` and `Cache-Control: no-cache`.
    public static func events(
        keepAlive: Duration? = .seconds(15),
        _ write: @escaping @Sendable (ServerSentEventWriter) async throws -> Void
    ) -> HTTPServerResponse {
        var response = HTTPServerResponse(status: .ok, headerFields: [
            .contentType: "text/event-stream", .cacheControl: "no-cache",
        ])
        response.body = HTTPResponseBody(storage: .stream({ body in
            let events = ServerSentEventWriter(body: body)
            var timer: ScheduledTimer?
            if let keepAlive {
                do {
                    timer = try body.loop.schedule(after: keepAlive, repeating: keepAlive) { events.keepAliveTick() }
                } catch {
                    // The loop is shutting down: the connection ends with it, so no keep-alive is needed.
                }
            }
            defer { timer?.cancel() }
            try await write(events)
        }, watchesClient: true))
        return response
    }
}

extension HTTPField.Name {
    /// `Last-Event-ID`: the id of the last server-sent event a reconnecting client has seen.
    ///
    /// A value: safe from any thread.
    public static let lastEventID = HTTPField.Name("Last-Event-ID")!
}
