extension HTTPRouter {
    /// Adds middleware that runs inline on the loop thread (``HTTPMiddleware``).
    ///
    /// Middleware apply to every request the router gets: every route, whether added before or after
    /// them, and the server's own answers (404, 405, the automatic `OPTIONS`, 501). They run in the
    /// order they were added on the way in, and in the reverse order on the way out. See the article
    /// "Serving HTTP" for streaming and WebSocket routes.
    ///
    /// - Parameter middleware: The middleware.
    ///
    /// Build the router on any thread.
    public mutating func use(_ middleware: some HTTPMiddleware) {
        self.middleware.append(.inline(middleware))
    }

    /// Adds middleware that may suspend (``HTTPAsyncMiddleware``). Routes behind it run as a task.
    ///
    /// - Parameter middleware: The middleware.
    ///
    /// Build the router on any thread.
    public mutating func use(_ middleware: some HTTPAsyncMiddleware) {
        self.middleware.append(.async(middleware))
    }

    /// Adds middleware written as a closure that gets the request and the rest of the chain.
    ///
    /// ```swift
    /// router.use { request, next in
    ///     var response = try await next(request)
    ///     response.headerFields[.cacheControl] = "no-store"
    ///     return response
    /// }
    /// ```
    /// - Parameter body: Answers the request, usually by calling `next(request)`; runs in a task on the
    ///   connection's loop.
    ///
    /// Build the router on any thread.
    public mutating func use(
        _ body: @escaping @Sendable (HTTPServerRequest, HTTPMiddlewareNext) async throws -> HTTPServerResponse
    ) {
        middleware.append(.async(ClosureAsyncMiddleware(body: body)))
    }

    /// Adds inline middleware written as two closures: one before the handler, one on the way out.
    ///
    /// ```swift
    /// router.use(before: { request in
    ///     request.head.headerFields[.authorization] == nil ? .text("Unauthorized", status: .unauthorized) : nil
    /// }, after: { response, request in
    ///     response.headerFields[.server] = "LoopKit"
    /// })
    /// ```
    /// - Parameters:
    ///   - before: Changes the request, or returns a response to answer early (``HTTPMiddleware/handleRequest(_:)``).
    ///   - after: Changes the response on its way out (``HTTPMiddleware/handleResponse(_:for:)``).
    ///
    /// Build the router on any thread; the closures run on the connection's loop thread.
    public mutating func use(
        before: (@Sendable (inout HTTPServerRequest) throws -> HTTPServerResponse?)? = nil,
        after: (@Sendable (inout HTTPServerResponse, HTTPServerRequest) -> Void)? = nil
    ) {
        middleware.append(.inline(ClosureMiddleware(before: before, after: after)))
    }
}
