import HTTPTypes

extension HTTPRouter {
    /// Adds a route whose handler reads the request body as it arrives, as an `AsyncSequence` with
    /// backpressure (``HTTPRequestBody``), instead of after it has been collected.
    ///
    /// ```swift
    /// router.on(.post, "/upload", bodyLimit: nil) { request, body in
    ///     var count = 0
    ///     for try await chunk in body { count += chunk.count }
    ///     return .text("received \(count)")
    /// }
    /// ```
    /// - Parameters:
    ///   - method: The method it answers.
    ///   - path: The path pattern.
    ///   - bodyLimit: The most body bytes (413 past them); nil for no limit. The server's
    ///     ``HTTPServer/Configuration/maxBodySize`` applies only to collected bodies.
    ///   - handler: Runs as a task on the connection's loop once the head is parsed.
    public mutating func on(
        _ method: HTTPRequest.Method, _ path: String, bodyLimit: Int?,
        _ handler: @escaping @Sendable (HTTPServerRequest, HTTPRequestBody) async throws -> HTTPServerResponse
    ) {
        add(method, path, .streaming(limit: bodyLimit, handler))
    }

    /// Adds a route whose handler reads the request body with callbacks as it arrives and answers through
    /// an ``HTTPResponder``: the synchronous form of the streaming route.
    ///
    /// ```swift
    /// router.on(.post, "/count", bodyLimit: 1 << 30) { request, body, responder in
    ///     var count = 0
    ///     body.read({ count += $0.count }, onEnd: { _ in responder.send(.text("\(count)")) })
    /// }
    /// ```
    /// - Parameters:
    ///   - method: The method it answers.
    ///   - path: The path pattern.
    ///   - bodyLimit: The most body bytes (413 past them); nil for no limit.
    ///   - handler: Runs on the connection's loop thread once the head is parsed.
    public mutating func on(
        _ method: HTTPRequest.Method, _ path: String, bodyLimit: Int?,
        _ handler: @escaping @Sendable (HTTPServerRequest, HTTPRequestBody, HTTPResponder) -> Void
    ) {
        add(method, path, .streamingCallback(limit: bodyLimit, handler))
    }
}
