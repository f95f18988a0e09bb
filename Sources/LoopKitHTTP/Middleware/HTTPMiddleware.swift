import HTTPTypes

/// Middleware that never suspends: it runs inline on the connection's loop thread, before the handler
/// (``handleRequest(_:)``: look at or change the request, or answer early), after it
/// (``handleResponse(_:for:)``: change the response on its way out), and once the response has ended
/// (``responseEnded(_:for:)``: the final status and byte count, for an access log or metrics).
///
/// ```swift
/// struct RequireToken: HTTPMiddleware {
///     func handleRequest(_ request: inout HTTPServerRequest) throws -> HTTPServerResponse? {
///         request.head.headerFields[.authorization] == "Bearer s3cret" ? nil : .text("no", status: .unauthorized)
///     }
/// }
/// router.use(RequireToken())
/// ```
///
/// Inline middleware cost no task and no allocation: a synchronous route behind only inline middleware
/// is answered inside the read callback that parsed it, as without middleware. They apply to every kind
/// of route (see the article <doc:ServingHTTP> for the order, and for streaming and WebSocket routes).
///
/// Every method is called on the connection's loop thread. Each has a default that does nothing.
public protocol HTTPMiddleware: Sendable {
    /// Runs before the handler (and before the middleware added after this one): change `request`, or
    /// return a response to answer at once, without the rest of the chain.
    ///
    /// - Parameter request: The request; later middleware and the handler see the changes.
    /// - Returns: A response to answer with now, or nil to go on.
    /// - Throws: Any error: the rest of the chain is skipped, and the error goes out through the
    ///   middleware added before this one (the server answers 500 for an error nothing catches).
    ///
    /// Called on the connection's loop thread.
    func handleRequest(_ request: inout HTTPServerRequest) throws -> HTTPServerResponse?

    /// Runs on the way out, with the response of the handler or of a later middleware's early answer
    /// (not with a response this middleware's own ``handleRequest(_:)`` returned, nor after an error).
    ///
    /// - Parameters:
    ///   - response: The response; what this changes is what is sent (and what earlier middleware see).
    ///   - request: The request as this middleware passed it on.
    ///
    /// Called on the connection's loop thread.
    func handleResponse(_ response: inout HTTPServerResponse, for request: HTTPServerRequest)

    /// Runs once the response of a request this middleware saw has ended (its last byte handed to the
    /// connection), or the connection closed before it did: the hook for an access log or metrics.
    ///
    /// - Parameters:
    ///   - summary: The status sent, the body bytes, when the request started and ended.
    ///   - request: The request as the handler saw it (or as it was when a middleware answered early,
    ///     or threw).
    ///
    /// Called on the connection's loop thread; keep it short (no I/O that blocks).
    func responseEnded(_ summary: HTTPResponseSummary, for request: HTTPServerRequest)
}

extension HTTPMiddleware {
    /// Goes on with the request unchanged.
    ///
    /// - Parameter request: The request.
    /// - Returns: nil.
    public func handleRequest(_ request: inout HTTPServerRequest) throws -> HTTPServerResponse? { nil }

    /// Leaves the response as it is.
    ///
    /// - Parameters:
    ///   - response: The response.
    ///   - request: The request.
    public func handleResponse(_ response: inout HTTPServerResponse, for request: HTTPServerRequest) {}

    /// Does nothing.
    ///
    /// - Parameters:
    ///   - summary: The summary.
    ///   - request: The request.
    public func responseEnded(_ summary: HTTPResponseSummary, for request: HTTPServerRequest) {}
}

/// Middleware that may suspend: it receives the request and ``HTTPMiddlewareNext``, the rest of the
/// chain, and returns the response, so it can do work before and after, await (a token check against
/// another service), catch the errors of the rest of the chain, or answer without calling `next`.
///
/// ```swift
/// router.use { request, next in
///     guard try await tokens.isValid(request.head.headerFields[.authorization]) else {
///         return .text("Unauthorized", status: .unauthorized)
///     }
///     var response = try await next(request)
///     response.headerFields[.cacheControl] = "no-store"
///     return response
/// }
/// ```
///
/// A route behind async middleware runs as a `Task` on the connection's loop (as an async route does),
/// even when its handler is synchronous.
///
/// Called on the connection's loop thread (the task's executor is the loop).
public protocol HTTPAsyncMiddleware: Sendable {
    /// Answers `request`, usually by calling `next` and returning its response, changed or not.
    ///
    /// - Parameters:
    ///   - request: The request.
    ///   - next: The rest of the chain: the middleware added after this one, then the handler.
    /// - Returns: The response.
    /// - Throws: Any error: it goes out through the middleware added before this one; the server
    ///   answers 500 for an error nothing catches.
    func respond(to request: HTTPServerRequest, next: HTTPMiddlewareNext) async throws -> HTTPServerResponse
}

/// The rest of a middleware chain, as an ``HTTPAsyncMiddleware`` sees it: call it (once) with the
/// request to run the middleware after this one and the handler.
///
/// Call it from the middleware's task (on the connection's loop).
public struct HTTPMiddlewareNext: Sendable {
    let chain: HTTPMiddlewareChain
    let index: Int
    let trail: HTTPMiddlewareChain.Trail
    let terminal: @Sendable (HTTPServerRequest) async throws -> HTTPServerResponse

    /// Runs the rest of the chain with `request`.
    ///
    /// - Parameter request: The request, as this middleware passes it on.
    /// - Returns: The response of the rest of the chain.
    /// - Throws: What the rest of the chain throws.
    public func callAsFunction(_ request: HTTPServerRequest) async throws -> HTTPServerResponse {
        try await chain.run(request, from: index, trail: trail, terminal: terminal)
    }
}

/// What a request's response came to: for an access log or metrics (``HTTPMiddleware/responseEnded(_:for:)``).
public struct HTTPResponseSummary: Sendable {
    /// The status sent; nil when the connection closed before any response went out.
    public var status: HTTPResponse.Status?
    /// The response body bytes handed to the connection (after any chunked framing was removed; none
    /// for `HEAD`).
    public var bodyBytes: Int
    /// When the request's head arrived (``HTTPServerRequest/startTime``).
    public var startTime: ContinuousClock.Instant
    /// When the response ended.
    public var endTime: ContinuousClock.Instant
    /// False when the connection closed (or was aborted) before the response ended.
    public var isComplete: Bool

    /// From the request's head to the response's end.
    public var duration: Duration { endTime - startTime }
}
