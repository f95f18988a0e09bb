import HTTPTypes
import Tracing

/// One request's life, from its head to the end of its response: what the dispatcher (``HTTPDispatcher``)
/// keeps per request. A codec holds the exchange of each request it serves in flight (an HTTP/1 connection
/// one at a time; an HTTP/2 connection one per stream) and leaves its contents to the dispatcher.
///
/// Made when a head arrives (``HTTPDispatcher/headArrived(_:on:)``), ended once
/// (``HTTPDispatcher/exchangeEnded(on:isComplete:)``): the response ended, the connection closed first, or the
/// protocol was switched. Loop-confined, like the connection that holds it.
struct HTTPExchange {
    /// A route that took a request: its handler and the parameters it bound. A struct, not a tuple, so
    /// that copying the optional of it is specialised code rather than the runtime's tuple witnesses.
    struct RouteMatch {
        var handler: HTTPHandler
        var parameters: HTTPPathParameters
        /// The route's chain when it is in a group with middleware (nil: the router's middleware).
        var chain: HTTPMiddlewareChain?
    }

    /// State that a plain request never needs (tracing, middleware, a callback route's answer awaited by
    /// middleware), kept out of the exchange so that the connection holding one stays small; made on first
    /// use and kept by the connection between requests (``HTTPDispatcher/spareExtras``), so a keep-alive
    /// connection makes it once.
    final class Extras {
        /// The request's server span, when a tracer is on; ended with the response.
        var span: (any Span)?
        /// Behind an inline chain: the request as the middleware left it and how many it reached (their
        /// `responseEnded` is owed).
        var middlewareTrail: HTTPMiddlewareChain.InlineTrail?
        /// Behind a chain with async middleware: the same, filled as the request goes down the chain.
        var asyncTrail: HTTPMiddlewareChain.Trail?
        /// A callback-form streaming route's answer, awaited by the middleware chain.
        var responseSlot: HTTPResponseSlot?

        /// Forgets everything, for the next request.
        func reset() {
            span = nil
            middlewareTrail = nil
            asyncTrail = nil
            responseSlot = nil
        }
    }

    /// The request head, read in place (a copy would retain, then release, each of its fields).
    let head: HTTPRequestHead
    /// The route that took the request (nil: none matched; see ``unrouted``). Taken when its handler runs.
    var route: RouteMatch?
    /// What the request resolved to when no route took it (404, 405, OPTIONS, 501).
    var unrouted: HTTPRouter.Resolution
    /// The request's id, start, route and trace context.
    let context: HTTPRequestContext
    /// The response has begun (its head is written, or a refusal went out): a later response is dropped.
    var responseStarted = false
    /// The status sent.
    var responseStatus: HTTPResponse.Status?
    /// The task writing a streamed response body, until it ends; cancelled when the connection closes.
    var responseTask: Task<Void, Never>?
    /// The streamed body is an event stream (``HTTPServerResponse/events(keepAlive:_:)``): open-ended, so
    /// graceful shutdown ends it rather than wait for it.
    var streamsEvents = false
    /// Graceful shutdown cancelled the event stream's task: however its writer ends (returning, or throwing
    /// the cancellation), the body is terminated cleanly and the connection closes.
    var eventStreamEndedByShutdown = false
    /// The rarely needed parts (nil until one is).
    var extras: Extras?

    /// The extras, made (or taken from `spare`) on first use.
    mutating func makeExtras(reusing spare: inout Extras?) -> Extras {
        if let extras { return extras }
        let made = spare.take() ?? Extras()
        extras = made
        return made
    }

    /// Takes the trail kept for the request, inline or async, leaving none.
    func takeMiddlewareTrail() -> HTTPMiddlewareChain.InlineTrail? {
        guard let extras else { return nil }
        if let trail = extras.middlewareTrail.take() { return trail }
        guard let asyncTrail = extras.asyncTrail else { return nil }
        extras.asyncTrail = nil
        return asyncTrail.take()
    }

    /// Whether middleware ran for the request (its `responseEnded` is owed through the trail).
    var hasMiddlewareTrail: Bool { extras?.middlewareTrail != nil || extras?.asyncTrail != nil }
}
