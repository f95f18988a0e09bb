import HTTPTypes
import Tracing

/// One request's life, from its head to the end of its response: what the dispatcher (``HTTPDispatcher``)
/// keeps per request. A codec holds the exchange of each request it serves in flight (an HTTP/1 connection
/// one at a time; an HTTP/2 connection one per stream) and leaves its contents to the dispatcher.
///
/// Begun when a head arrives (``HTTPDispatcher/headArrived(_:on:)``), ended once
/// (``HTTPDispatcher/exchangeEnded(on:isComplete:)``): the response ended, the connection closed first, or the
/// protocol was switched. A class, reused: an HTTP/1 connection keeps its ended exchange
/// (``HTTPStream/spareExchange``) and begins the next request in it, so a keep-alive request allocates none,
/// and the dispatcher's reads of it through the stream (`stream.exchange!.head`) load one reference instead
/// of copying a struct of a dozen fields out of the stream. Nothing holds an exchange past its end but the
/// stream's spare slot. Loop-confined, like the connection that holds it: one thread ever touches it, so its
/// properties skip the runtime's exclusivity checks (`@exclusivity(unchecked)`).
final class HTTPExchange {
    /// State that a plain request never needs (tracing, middleware, a callback route's answer awaited by
    /// middleware), kept out of the exchange so that it stays small; made on first use and kept with the
    /// exchange between requests, so a keep-alive connection makes it once.
    final class Extras {
        /// The request's server span, when a tracer is on; ended with the response.
        var span: (any Span)?
        /// The request's trace context, when tracing is on (nil: `.topLevel`).
        var serviceContext: ServiceContext?
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
            serviceContext = nil
            middlewareTrail = nil
            asyncTrail = nil
            responseSlot = nil
        }
    }

    /// The request head, read in place (a copy would retain, then release, each of its fields).
    @exclusivity(unchecked) private(set) var head: HTTPRequestHead
    /// The handler of the route that took the request (nil: none matched; see ``unrouted``). Taken when
    /// it runs. The route's parts are kept apart, not as an optional struct of them: copying that optional
    /// went through the runtime's generic witnesses (a few hundred instructions a request).
    @exclusivity(unchecked) var handler: HTTPHandler?
    /// The parameters the route bound.
    @exclusivity(unchecked) var parameters = HTTPPathParameters()
    /// The route's chain when it is in a group with middleware (nil: the router's middleware).
    @exclusivity(unchecked) var chain: HTTPMiddlewareChain?
    /// What the request resolved to when no route took it (404, 405, OPTIONS, 501).
    @exclusivity(unchecked) var unrouted: HTTPRouter.Resolution
    /// The request's id: the client's when valid, else one the loop made. Kept in the head, with the
    /// start and the route (``HTTPParsedHead``), where the request reads them.
    var requestID: String { head.storage.id }
    /// When the request's head arrived.
    var startTime: ContinuousClock.Instant { head.storage.startTime }
    /// The pattern of the route that took the request (nil: none did).
    var routePattern: String? { head.storage.route }
    /// The response has begun (its head is written, or a refusal went out): a later response is dropped.
    @exclusivity(unchecked) var responseStarted = false
    /// The status sent.
    @exclusivity(unchecked) var responseStatus: HTTPResponse.Status?
    /// The task writing a streamed response body, until it ends; cancelled when the connection closes.
    @exclusivity(unchecked) var responseTask: Task<Void, Never>?
    /// The streamed body is an event stream (``HTTPServerResponse/events(keepAlive:_:)``): open-ended, so
    /// graceful shutdown ends it rather than wait for it.
    @exclusivity(unchecked) var streamsEvents = false
    /// Graceful shutdown cancelled the event stream's task: however its writer ends (returning, or throwing
    /// the cancellation), the body is terminated cleanly and the connection closes.
    @exclusivity(unchecked) var eventStreamEndedByShutdown = false
    /// The rarely needed parts (nil until one is; then kept, emptied, for the exchange's next request).
    @exclusivity(unchecked) private(set) var extras: Extras?

    private init(head: HTTPRequestHead) {
        self.head = head
        unrouted = .notFound
    }

    /// An exchange for a request whose head arrived, with the client's id `id` (nil: the next of
    /// `context`'s), started now: `spare` (an ended exchange
    /// of the same stream) begun again, or a new one. The dispatcher then tells it where the request was
    /// routed (``routed(to:parameters:chain:pattern:)`` or ``unmatched(_:)``).
    static func begin(_ head: HTTPRequestHead, id: String?, context: HTTPLoopContext, reusing spare: inout HTTPExchange?) -> HTTPExchange {
        if let id {
            head.storage.identify(id: id, startTime: .now)
        } else {
            head.storage.identify(number: context.requestIDs.nextNumber(), prefix: context.requestIDs.prefix, startTime: .now)
        }
        guard let exchange = spare.take() else { return HTTPExchange(head: head) }
        exchange.head = head
        exchange.responseStarted = false
        exchange.responseStatus = nil
        exchange.responseTask = nil
        exchange.streamsEvents = false
        exchange.eventStreamEndedByShutdown = false
        exchange.extras?.reset()
        return exchange
    }

    /// The request was taken by the route of `pattern`.
    func routed(to handler: HTTPHandler, parameters: HTTPPathParameters, chain: HTTPMiddlewareChain?, pattern: String) {
        self.handler = handler
        self.parameters = parameters
        self.chain = chain
        head.storage.route = pattern
        unrouted = .notFound
    }

    /// No route took the request: it resolved to `resolution` (404, 405, `OPTIONS`, 501).
    func unmatched(_ resolution: HTTPRouter.Resolution) {
        handler = nil
        parameters = HTTPPathParameters()
        chain = nil
        unrouted = resolution
    }

    /// The ended exchange's parsed head, when nothing but the exchange references it any more (every
    /// request made of it is gone): for the parser to fill with the next request's
    /// (``HTTPRequestParser/spareHead``). The exchange keeps it until it begins again, and it is never read
    /// meanwhile.
    func takeHeadIfUnreferenced() -> HTTPParsedHead? {
        isKnownUniquelyReferenced(&head.storage) ? head.storage : nil
    }

    /// The extras, made on first use.
    func makeExtras() -> Extras {
        if let extras { return extras }
        let made = Extras()
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
