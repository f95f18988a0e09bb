import LoopKit

/// A router's middleware, in the order they were added, and how a request runs through them.
struct HTTPMiddlewareChain: Sendable {
    enum Entry: Sendable {
        case inline(any HTTPMiddleware)
        case async(any HTTPAsyncMiddleware)
    }

    private(set) var entries: [Entry] = []
    /// True while no entry is async: the chain runs inline, with no task.
    private(set) var isInline = true

    var isEmpty: Bool { entries.isEmpty }

    mutating func append(_ entry: Entry) {
        if case .async = entry { isInline = false }
        entries.append(entry)
    }

    /// `outer`'s entries, then `inner`'s: a route group's chain inside its router's.
    static func + (outer: Self, inner: Self) -> Self {
        var chain = outer
        for entry in inner.entries { chain.append(entry) }
        return chain
    }

    /// How far a request went down the chain, and the request as it was there: the entries whose
    /// ``HTTPMiddleware/responseEnded(_:for:)`` runs, and what they are given. Kept by the connection
    /// until the response ends. A class: the request is moved in once and the connection keeps and takes
    /// one reference (an optional of the request itself, a large struct, is stored and taken through
    /// the runtime's generic value witnesses, which cost more than this allocation).
    final class InlineTrail {
        let request: HTTPServerRequest
        let reached: Int
        /// The chain the request went down (a route group's has more entries than its router's).
        let chain: HTTPMiddlewareChain

        init(request: consuming HTTPServerRequest, reached: Int, chain: HTTPMiddlewareChain) {
            self.request = request
            self.reached = reached
            self.chain = chain
        }
    }

    /// How far a request went down an async chain, and the request as it was there: the entries whose
    /// ``HTTPMiddleware/responseEnded(_:for:)`` runs, and what they are given.
    final class Trail: Sendable {
        let state = Lock<(reached: Int, request: HTTPServerRequest?)>((0, nil))
        let chain: HTTPMiddlewareChain

        init(chain: HTTPMiddlewareChain) { self.chain = chain }

        func reach(_ reached: Int, _ request: HTTPServerRequest) {
            state.withLock { $0 = (max($0.reached, reached), request) }
        }

        /// Takes the request and how far it went (nil when it went nowhere), leaving none.
        func take() -> InlineTrail? {
            state.withLock { state in state.request.take().map { InlineTrail(request: $0, reached: state.reached, chain: chain) } }
        }
    }

    /// Runs an inline chain (every entry inline) and a synchronous terminal, on the loop thread.
    ///
    /// The request is moved down the chain, not copied at every step: each entry keeps one copy (the
    /// request as it passed it on, for its ``HTTPMiddleware/handleResponse(_:for:)``), and the request as
    /// the terminal, the middleware that answered or the one that threw left it is moved into `trail`.
    ///
    /// - Parameters:
    ///   - request: The request.
    ///   - index: The first entry to run.
    ///   - trail: Set to the request as the terminal (or the middleware that answered or threw) saw it,
    ///     and the number of entries it reached.
    ///   - terminal: The handler, or the server's own answer.
    func runInline(_ request: consuming HTTPServerRequest, from index: Int = 0, trail: inout InlineTrail?,
                   terminal: (HTTPServerRequest) throws -> HTTPServerResponse) throws -> HTTPServerResponse {
        guard index < entries.count else {
            let response: HTTPServerResponse
            do {
                response = try terminal(request)
            } catch {
                trail = InlineTrail(request: request, reached: index, chain: self)
                throw error
            }
            trail = InlineTrail(request: request, reached: index, chain: self)
            return response
        }
        guard case .inline(let middleware) = entries[index] else { preconditionFailure("an async entry in an inline chain") }
        var request = request
        let early: HTTPServerResponse?
        do {
            early = try middleware.handleRequest(&request)
        } catch {
            trail = InlineTrail(request: request, reached: index + 1, chain: self)
            throw error
        }
        if let early {
            trail = InlineTrail(request: request, reached: index + 1, chain: self)
            return early
        }
        var response = try runInline(copy request, from: index + 1, trail: &trail, terminal: terminal)
        middleware.handleResponse(&response, for: request)
        return response
    }

    /// What ``runInlineOrDefer(_:from:trail:terminal:)`` came to.
    enum InlineOutcome: Sendable {
        /// The response, through every entry's ``HTTPMiddleware/handleResponse(_:for:)`` already.
        case answered(HTTPServerResponse)
        /// The terminal could not answer inline: its task is to, then the response goes out through ``Deferred/unwind(_:)``.
        case deferred(Deferred)
    }

    /// A request whose terminal answers later: the request as the terminal got it, and the entries the
    /// response is still to go out through, innermost first, each with the request it passed on.
    struct Deferred: Sendable {
        let request: HTTPServerRequest
        var unwinding: [(middleware: any HTTPMiddleware, request: HTTPServerRequest)] = []

        /// Runs each entry's ``HTTPMiddleware/handleResponse(_:for:)``, innermost first. Loop thread.
        func unwind(_ response: inout HTTPServerResponse) {
            for (middleware, request) in unwinding { middleware.handleResponse(&response, for: request) }
        }
    }

    /// ``runInline(_:from:trail:terminal:)`` with a terminal that may decline (nil): then nothing more runs
    /// now, and the outcome tells what the terminal's task is given and which entries its response goes
    /// out through. The trail is set as `runInline` sets it.
    func runInlineOrDefer(_ request: consuming HTTPServerRequest, from index: Int = 0, trail: inout InlineTrail?,
                          terminal: (HTTPServerRequest) throws -> HTTPServerResponse?) throws -> InlineOutcome {
        guard index < entries.count else {
            let response: HTTPServerResponse?
            do {
                response = try terminal(request)
            } catch {
                trail = InlineTrail(request: request, reached: index, chain: self)
                throw error
            }
            let outcome: InlineOutcome = response.map { .answered($0) } ?? .deferred(Deferred(request: copy request))
            trail = InlineTrail(request: request, reached: index, chain: self)
            return outcome
        }
        guard case .inline(let middleware) = entries[index] else { preconditionFailure("an async entry in an inline chain") }
        var request = request
        let early: HTTPServerResponse?
        do {
            early = try middleware.handleRequest(&request)
        } catch {
            trail = InlineTrail(request: request, reached: index + 1, chain: self)
            throw error
        }
        if let early {
            trail = InlineTrail(request: request, reached: index + 1, chain: self)
            return .answered(early)
        }
        switch try runInlineOrDefer(copy request, from: index + 1, trail: &trail, terminal: terminal) {
        case .answered(var response):
            middleware.handleResponse(&response, for: request)
            return .answered(response)
        case .deferred(var deferred):
            deferred.unwinding.append((middleware, request))
            return .deferred(deferred)
        }
    }

    /// Runs the chain from `index` in the calling task (on the loop), then `terminal`.
    func run(_ request: HTTPServerRequest, from index: Int, trail: Trail,
             terminal: @escaping @Sendable (HTTPServerRequest) async throws -> HTTPServerResponse) async throws -> HTTPServerResponse {
        trail.reach(index, request)
        guard index < entries.count else { return try await terminal(request) }
        trail.reach(index + 1, request)
        switch entries[index] {
        case .inline(let middleware):
            var request = request
            if let early = try middleware.handleRequest(&request) {
                trail.reach(index + 1, request)
                return early
            }
            var response = try await run(request, from: index + 1, trail: trail, terminal: terminal)
            middleware.handleResponse(&response, for: request)
            return response
        case .async(let middleware):
            return try await middleware.respond(to: request, next: HTTPMiddlewareNext(chain: self, index: index + 1, trail: trail,
                                                                                      terminal: terminal))
        }
    }

    /// Tells the first `reached` inline entries, innermost first, that the response has ended.
    func responseEnded(_ summary: HTTPResponseSummary, for request: HTTPServerRequest, reached: Int) {
        var index = min(reached, entries.count)
        while index > 0 {
            index -= 1
            if case .inline(let middleware) = entries[index] { middleware.responseEnded(summary, for: request) }
        }
    }
}

/// ``HTTPMiddleware`` from two closures (`router.use(before:after:)`).
struct ClosureMiddleware: HTTPMiddleware {
    let before: (@Sendable (inout HTTPServerRequest) throws -> HTTPServerResponse?)?
    let after: (@Sendable (inout HTTPServerResponse, HTTPServerRequest) -> Void)?

    func handleRequest(_ request: inout HTTPServerRequest) throws -> HTTPServerResponse? {
        try before?(&request)
    }

    func handleResponse(_ response: inout HTTPServerResponse, for request: HTTPServerRequest) {
        after?(&response, request)
    }
}

/// ``HTTPAsyncMiddleware`` from a closure (`router.use { request, next in … }`).
struct ClosureAsyncMiddleware: HTTPAsyncMiddleware {
    let body: @Sendable (HTTPServerRequest, HTTPMiddlewareNext) async throws -> HTTPServerResponse

    func respond(to request: HTTPServerRequest, next: HTTPMiddlewareNext) async throws -> HTTPServerResponse {
        try await body(request, next)
    }
}
