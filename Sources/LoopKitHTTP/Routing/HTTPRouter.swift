import HTTPTypes

/// Method + path routing with `:name` parameters: all a small service needs, and no more.
///
/// ```swift
/// var router = HTTPRouter()
/// router.get("/hello") { _ in .text("Hello, World!") }
/// router.get("/users/:id") { request in .text("user \(request.parameters["id"]!)") }
/// ```
/// Routes are matched in the order they were added; a request no route matches gets 404. A `HEAD`
/// request is answered by the `GET` route of its path when no `HEAD` route matches (without the body).
///
/// A value type: build it on any thread before handing it to the server.
public struct HTTPRouter: Sendable {
    struct Route: Sendable {
        enum Segment: Sendable, Equatable {
            case literal(String)
            case parameter(String)
        }
        var method: HTTPRequest.Method
        var segments: [Segment]
        var handler: HTTPHandler
    }

    var routes: [Route] = []

    /// An empty router: every request gets 404.
    public init() {}

    /// Adds a route.
    ///
    /// - Parameters:
    ///   - method: The method it answers.
    ///   - path: `/`-separated segments; a segment `:name` matches any one segment and binds it to `name`.
    ///   - handler: What runs.
    public mutating func add(_ method: HTTPRequest.Method, _ path: String, _ handler: HTTPHandler) {
        let segments = path.split(separator: "/", omittingEmptySubsequences: true).map { segment -> Route.Segment in
            segment.first == ":" ? .parameter(String(segment.dropFirst())) : .literal(String(segment))
        }
        routes.append(Route(method: method, segments: segments, handler: handler))
    }

    /// Adds a synchronous `GET` route (it runs on the loop thread).
    /// - Parameters:
    ///   - path: The path pattern.
    ///   - handler: What runs.
    public mutating func get(_ path: String, _ handler: @escaping @Sendable (HTTPServerRequest) throws -> HTTPServerResponse) {
        add(.get, path, .sync(handler))
    }

    /// Adds an asynchronous `GET` route (a task on the loop's executor).
    /// - Parameters:
    ///   - path: The path pattern.
    ///   - handler: What runs.
    public mutating func get(_ path: String, _ handler: @escaping @Sendable (HTTPServerRequest) async throws -> HTTPServerResponse) {
        add(.get, path, .async(handler))
    }

    /// Adds a synchronous `POST` route.
    /// - Parameters:
    ///   - path: The path pattern.
    ///   - handler: What runs.
    public mutating func post(_ path: String, _ handler: @escaping @Sendable (HTTPServerRequest) throws -> HTTPServerResponse) {
        add(.post, path, .sync(handler))
    }

    /// Adds an asynchronous `POST` route.
    /// - Parameters:
    ///   - path: The path pattern.
    ///   - handler: What runs.
    public mutating func post(_ path: String, _ handler: @escaping @Sendable (HTTPServerRequest) async throws -> HTTPServerResponse) {
        add(.post, path, .async(handler))
    }

    /// Finds the route for a method and a path (query excluded).
    ///
    /// - Parameters:
    ///   - method: The request's method.
    ///   - path: The request's path, without the query.
    /// - Returns: The handler and the bound parameters, or nil (404).
    public func match(_ method: HTTPRequest.Method, path: Substring) -> (handler: HTTPHandler, parameters: HTTPPathParameters)? {
        if let found = match(exactly: method, path: path) { return found }
        if method == .head { return match(exactly: .get, path: path) }
        return nil
    }

    private func match(exactly method: HTTPRequest.Method, path: Substring) -> (handler: HTTPHandler, parameters: HTTPPathParameters)? {
        routes: for route in routes where route.method == method {
            var parameters = HTTPPathParameters()
            var rest = path.utf8[...]
            for segment in route.segments {
                while rest.first == UInt8(ascii: "/") { rest = rest.dropFirst() }
                guard !rest.isEmpty else { continue routes }
                let end = rest.firstIndex(of: UInt8(ascii: "/")) ?? rest.endIndex
                let part = Substring(rest[rest.startIndex..<end])
                switch segment {
                case .literal(let literal):
                    guard part == literal else { continue routes }
                case .parameter(let name):
                    parameters.pairs.append((name, part))
                }
                rest = rest[end...]
            }
            while rest.first == UInt8(ascii: "/") { rest = rest.dropFirst() }
            guard rest.isEmpty else { continue routes }
            return (route.handler, parameters)
        }
        return nil
    }
}
