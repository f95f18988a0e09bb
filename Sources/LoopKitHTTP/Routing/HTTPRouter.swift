import HTTPTypes

/// Method + path routing with `:name` parameters: all a small service needs, and no more.
///
/// ```swift
/// var router = HTTPRouter()
/// router.get("/hello") { _ in .text("Hello, World!") }
/// router.get("/users/:id") { request in .text("user \(request.parameters["id"]!)") }
/// router.get("/report", .inTask) { request in try await buildReport(request) }
/// ```
/// A route's handler runs inline on the loop thread (a synchronous closure, answered inside the read
/// callback: no task) or, marked ``HTTPTaskExecution/inTask``, as a task on the loop (an async closure;
/// the connection is not read meanwhile). The marker makes the difference visible where the route is
/// added: an `await` alone no longer moves a handler into a task without a word (``HTTPTaskExecution``).
/// Routes are matched in the order they were added. A request no route matches gets 404; one whose path
/// a route answers for other methods gets 405 with `Allow` (501 for a method the server knows nothing
/// of); `OPTIONS` answers 204 with `Allow` unless a route of its own does (`OPTIONS *`: every method the
/// router has). A `HEAD` request is answered by the `GET` route of its path when no `HEAD` route matches
/// (without the body). RFC 9110 §9.1, §15.5.6 and §15.6.2.
///
/// Middleware (`use(_:)`) wrap every request, routed or not, in the order they were added, whether
/// added before or after the routes.
///
/// A value type: build it on any thread before handing it to the server.
public struct HTTPRouter: Sendable {
    struct Route: Sendable {
        enum Segment: Sendable, Equatable {
            case literal(String)
            case parameter(String)
            /// `*name`, last: the rest of the path (any number of segments, possibly none), as written.
            case remainder(String)
        }
        var method: HTTPRequest.Method
        var segments: [Segment]
        var handler: HTTPHandler
        /// The pattern as `/a/:b` (OpenTelemetry's `http.route`).
        var pattern: String
        /// The middleware of the groups the route was added in, outermost first (``group(_:_:)``).
        var groupMiddleware = HTTPMiddlewareChain()
        /// The router's middleware and then the groups', made once before serving; nil outside a group.
        var chain: HTTPMiddlewareChain?
    }

    var routes: [Route] = []
    /// Routes whose pattern has no parameter and that no earlier route of their method matches, by method
    /// and pattern (`GET /hello`): such a route is found with one hash lookup when the
    /// request's path is written as its pattern is (no doubled or trailing slash), rather than by trying
    /// every route in turn. The first route added wins, as in the scan.
    var literalRoutes = HTTPLiteralRoutes()
    /// The middleware every request runs through (`use(_:)`).
    var middleware = HTTPMiddlewareChain()
    /// Some route has middleware of its group's (``withGroupChains()`` made its chain).
    var hasGroupChains = false

    /// An empty router: every request gets 404.
    public init() {}

    /// Adds a route.
    ///
    /// - Parameters:
    ///   - method: The method it answers.
    ///   - path: `/`-separated segments; a segment `:name` matches any one segment and binds it to `name`;
    ///     a last segment `*name` matches the rest of the path (none or more segments, as written, with a
    ///     trailing slash kept) and binds it to `name`.
    ///   - handler: What runs.
    public mutating func add(_ method: HTTPRequest.Method, _ path: String, _ handler: HTTPHandler) {
        add(method, path, handler, groupMiddleware: HTTPMiddlewareChain())
    }

    private mutating func add(_ method: HTTPRequest.Method, _ path: String, _ handler: HTTPHandler,
                              groupMiddleware: HTTPMiddlewareChain) {
        let segments = path.split(separator: "/", omittingEmptySubsequences: true).map { segment -> Route.Segment in
            switch segment.first {
            case ":": .parameter(String(segment.dropFirst()))
            case "*": .remainder(String(segment.dropFirst()))
            default: .literal(String(segment))
            }
        }
        let pattern = "/" + segments.map { segment in
            switch segment {
            case .literal(let literal): literal
            case .parameter(let name): ":" + name
            case .remainder(let name): "*" + name
            }
        }.joined(separator: "/")
        let isLiteral = segments.allSatisfy { if case .literal = $0 { true } else { false } }
        // An earlier route of the method that matches this path would win the scan: then no shortcut.
        let shadowed = routes.contains { $0.method == method && bind($0.segments, pattern[...]) != nil }
        if isLiteral, !shadowed { literalRoutes.add(method, path: pattern, route: routes.count) }
        routes.append(Route(method: method, segments: segments, handler: handler, pattern: pattern, groupMiddleware: groupMiddleware))
    }

    /// Adds a group of routes under `prefix`, with middleware of their own: what `build` adds to the
    /// router it is given (routes, `use(_:)` middleware, nested groups) joins this router with `prefix`
    /// before each path, and the group's middleware run for the group's routes only, inside this router's.
    ///
    /// ```swift
    /// router.use(AccessLogMiddleware())          // every request
    /// router.group("/api") { api in
    ///     api.use(BearerAuthentication())        // /api/... only
    ///     api.get("/todos") { _ in .json(todos) }
    /// }
    /// ```
    /// - Parameters:
    ///   - prefix: The path the group's routes are under (`/api`); `/` or empty for none.
    ///   - build: Adds the group's routes and middleware.
    ///
    /// Build the router on any thread.
    public mutating func group(_ prefix: String, _ build: (inout HTTPRouter) throws -> Void) rethrows {
        var group = HTTPRouter()
        try build(&group)
        for route in group.routes {
            add(route.method, prefix + route.pattern, route.handler, groupMiddleware: group.middleware + route.groupMiddleware)
        }
    }

    /// The router with each grouped route's whole chain made (the router's middleware, then its groups'):
    /// done once, when a server takes the router, as middleware may be added after the routes.
    func withGroupChains() -> HTTPRouter {
        var prepared = self
        for index in prepared.routes.indices where !prepared.routes[index].groupMiddleware.isEmpty {
            prepared.routes[index].chain = middleware + prepared.routes[index].groupMiddleware
            prepared.hasGroupChains = true
        }
        return prepared
    }

    /// What a request resolves to.
    public enum Resolution: Sendable {
        /// A route: its handler and the bound parameters.
        case found(HTTPHandler, HTTPPathParameters)
        /// The path has routes, for other methods: 405 with these in `Allow`.
        case methodNotAllowed(allow: [HTTPRequest.Method])
        /// `OPTIONS` on a path with routes (or `*`) and no route of its own: 204 with these in `Allow`.
        case options(allow: [HTTPRequest.Method])
        /// A method no route has and that is not one of RFC 9110's: 501.
        case notImplemented
        /// No route has this path: 404.
        case notFound
    }

    /// The methods of RFC 9110 §9 (and PATCH): a server knows them even without a route.
    static let knownMethods: [HTTPRequest.Method] = [.get, .head, .post, .put, .delete, .connect, .options, .trace, .patch]

    /// Resolves a method and a path (query excluded) to a route or to the answer that replaces one.
    ///
    /// - Parameters:
    ///   - method: The request's method.
    ///   - path: The request's path, without the query (`*` for `OPTIONS *`).
    /// - Returns: The route, or what to answer instead.
    public func resolve(_ method: HTTPRequest.Method, path: Substring) -> Resolution {
        guard let found = matchRoute(method, path: path) else { return unrouted(method, path: path) }
        return .found(routes[found.index].handler, found.parameters)
    }

    /// A route that matched: its index in ``routes`` and the parameters it bound. A struct, not a tuple,
    /// so that the optional of it is copied by specialised code rather than the runtime's tuple witnesses.
    struct Found {
        var index: Int
        var parameters: HTTPPathParameters
    }

    /// What a request no route took resolves to: 405 or `OPTIONS` with the path's methods, 501, or 404.
    func unrouted(_ method: HTTPRequest.Method, path: Substring) -> Resolution {
        let allowed: [HTTPRequest.Method]
        if method == .options && path == "*" {
            allowed = routes.map(\.method)
        } else {
            allowed = routes.filter { bind($0.segments, path) != nil }.map(\.method)
        }
        if !allowed.isEmpty {
            var allow: [HTTPRequest.Method] = []
            for candidate in allowed + (allowed.contains(.get) ? [.head] : []) + [.options] where !allow.contains(candidate) {
                allow.append(candidate)
            }
            return method == .options ? .options(allow: allow) : .methodNotAllowed(allow: allow)
        }
        if !Self.knownMethods.contains(method), !routes.contains(where: { $0.method == method }) { return .notImplemented }
        return .notFound
    }

    /// Finds the route for a method and a path (query excluded).
    ///
    /// - Parameters:
    ///   - method: The request's method.
    ///   - path: The request's path, without the query.
    /// - Returns: The handler and the bound parameters, or nil (404).
    @available(*, deprecated, message: "use resolve(_:path:), the one route lookup: .found(handler, parameters), or why no route matched")
    public func match(_ method: HTTPRequest.Method, path: Substring) -> (handler: HTTPHandler, parameters: HTTPPathParameters)? {
        matchRoute(method, path: path).map { (routes[$0.index].handler, $0.parameters) }
    }

    /// The route that takes `method` and `path` (`HEAD` falls back to `GET`), nil when none does.
    func matchRoute(_ method: HTTPRequest.Method, path: Substring) -> Found? {
        if let found = match(exactly: method, path: path) { return found }
        if method == .head { return match(exactly: .get, path: path) }
        return nil
    }

    private func match(exactly method: HTTPRequest.Method, path: Substring) -> Found? {
        if let index = literalRoutes.route(method, path: path) {
            return Found(index: index, parameters: HTTPPathParameters())
        }
        // The table's routes read in place: a copy of each (its pattern, segments, handler and chain)
        // retained and released every part of it, for each route tried.
        for index in routes.indices where routes[index].method == method {
            if let parameters = bind(routes[index].segments, path) { return Found(index: index, parameters: parameters) }
        }
        return nil
    }

    /// Whether `bytes` are `literal`'s UTF-8 bytes.
    private static func bytesEqual(_ bytes: UnsafeBufferPointer<UInt8>, _ literal: String) -> Bool {
        guard literal.utf8.count == bytes.count else { return false }
        var literal = literal
        return literal.withUTF8 { bytes.elementsEqual($0) }
    }

    /// The parameters a route's pattern (its `segments`) binds in `path`, or nil when the path does not
    /// fit the pattern.
    private func bind(_ segments: [Route.Segment], _ path: Substring) -> HTTPPathParameters? {
        // Walked as the path's contiguous bytes, by offset: the generic walk of its UTF-8 view (index
        // subscripts, `firstIndex`, a substring a segment) cost about 1.1k instructions a route tried.
        var parameters = HTTPPathParameters()
        let utf8 = path.utf8
        let base = utf8.startIndex
        func text(_ from: Int, _ to: Int) -> Substring {
            Substring(utf8[utf8.index(base, offsetBy: from)..<utf8.index(base, offsetBy: to)])
        }
        var contiguous = path
        let fits = contiguous.withUTF8 { bytes -> Bool in
            let slash = UInt8(ascii: "/")
            let count = bytes.count
            var position = 0
            for segment in segments {
                while position < count, bytes[position] == slash { position += 1 }
                if case .remainder(let name) = segment {
                    parameters.pairs.append((name, text(position, count)))
                    return true
                }
                guard position < count else { return false }
                var end = position
                while end < count, bytes[end] != slash { end += 1 }
                switch segment {
                case .literal(let literal):
                    // Byte equality: a path segment is not normalised, so no Unicode comparison is needed.
                    guard Self.bytesEqual(UnsafeBufferPointer(rebasing: bytes[position..<end]), literal) else { return false }
                case .parameter(let name):
                    parameters.pairs.append((name, text(position, end)))
                case .remainder:
                    return false  // handled before the segment is cut
                }
                position = end
            }
            while position < count, bytes[position] == slash { position += 1 }
            return position == count
        }
        return fits ? parameters : nil
    }
}
