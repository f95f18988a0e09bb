import HTTPTypes

// Adding routes. For each method: an inline form (a synchronous closure, run on the loop thread), the
// same with `.inline` spelt out, a task form marked `.inTask` (an async closure, run in a task on the
// loop) and, for source compatibility, the unmarked async form, deprecated. See ``HTTPTaskExecution``.
//
// What Swift picks (checked with the compiler; the same for every method, in a group as outside, and
// whether the router is built in synchronous or async code):
//   router.get("/a") { _ in .text("a") }                    inline
//   router.get("/a", .inline) { _ in .text("a") }           inline
//   router.get("/a", .inTask) { _ in try await work() }     in a task
//   router.get("/a", .inTask) { _ in .text("a") }           in a task (a synchronous closure may run in one)
//   router.get("/a", .inline) { _ in try await work() }     error: an async closure cannot run inline
//   router.get("/a") { _ in try await work() }              in a task, with a deprecation warning naming
//   router.get("/a") { _ async throws in ... }              `.inTask` (so is a function reference of an
//   router.get("/a", asyncFunction)                         async function)
extension HTTPRouter {
    // MARK: GET

    /// Adds a `GET` route whose handler runs inline: on the connection's loop thread, inside the read
    /// callback that parsed the request, once the body is collected (no task, no allocation).
    ///
    /// ```swift
    /// router.get("/report") { _ in .text("done") }
    /// ```
    /// - Parameters:
    ///   - path: The path pattern (`:name` segments bind parameters).
    ///   - handler: Answers the request; it must not block.
    ///
    /// Build the router on any thread.
    public mutating func get(_ path: String,
                             _ handler: @escaping @Sendable (HTTPServerRequest) throws -> HTTPServerResponse) {
        add(.get, path, .sync(handler))
    }

    /// Adds a `GET` route whose handler runs inline, saying so: the same as the form without `.inline`.
    ///
    /// ```swift
    /// router.get("/report", .inline) { _ in .text("done") }
    /// ```
    /// - Parameters:
    ///   - path: The path pattern (`:name` segments bind parameters).
    ///   - execution: ``HTTPInlineExecution/inline``.
    ///   - handler: Answers the request on the loop thread; it must not block.
    ///
    /// Build the router on any thread.
    public mutating func get(_ path: String, _ execution: HTTPInlineExecution,
                             _ handler: @escaping @Sendable (HTTPServerRequest) throws -> HTTPServerResponse) {
        add(.get, path, .sync(handler))
    }

    /// Adds a `GET` route whose handler runs as a task: a `Task` whose executor preference is the
    /// connection's loop (it starts there, no hop), once the body is collected; the connection is not read
    /// while it runs. It may await (`request.loop.process(…)`, another service).
    ///
    /// ```swift
    /// router.get("/report", .inTask) { request in try await work(request) }
    /// ```
    /// - Parameters:
    ///   - path: The path pattern (`:name` segments bind parameters).
    ///   - execution: ``HTTPTaskExecution/inTask``: the call site says that the handler runs in a task.
    ///   - handler: Answers the request.
    ///
    /// Build the router on any thread.
    public mutating func get(_ path: String, _ execution: HTTPTaskExecution,
                             _ handler: @escaping @Sendable (HTTPServerRequest) async throws -> HTTPServerResponse) {
        add(.get, path, .async(handler))
    }

    /// Adds a `GET` route whose async handler runs as a task, without saying so at the call site:
    /// deprecated, as one `await` added to an inline route's closure picks this form silently.
    ///
    /// - Parameters:
    ///   - path: The path pattern.
    ///   - handler: Answers the request, in a task on the connection's loop.
    ///
    /// Build the router on any thread.
    @available(*, deprecated, message: "this async handler runs in a task on the loop, with the connection's reads paused: say so with get(path, .inTask) { … }, or drop the await to run inline")
    public mutating func get(_ path: String,
                             _ handler: @escaping @Sendable (HTTPServerRequest) async throws -> HTTPServerResponse) {
        add(.get, path, .async(handler))
    }

    // MARK: POST

    /// Adds a `POST` route whose handler runs inline: on the connection's loop thread, inside the read
    /// callback that parsed the request, once the body is collected (no task, no allocation).
    ///
    /// ```swift
    /// router.post("/todos") { _ in .text("done") }
    /// ```
    /// - Parameters:
    ///   - path: The path pattern (`:name` segments bind parameters).
    ///   - handler: Answers the request; it must not block.
    ///
    /// Build the router on any thread.
    public mutating func post(_ path: String,
                              _ handler: @escaping @Sendable (HTTPServerRequest) throws -> HTTPServerResponse) {
        add(.post, path, .sync(handler))
    }

    /// Adds a `POST` route whose handler runs inline, saying so: the same as the form without `.inline`.
    ///
    /// ```swift
    /// router.post("/todos", .inline) { _ in .text("done") }
    /// ```
    /// - Parameters:
    ///   - path: The path pattern (`:name` segments bind parameters).
    ///   - execution: ``HTTPInlineExecution/inline``.
    ///   - handler: Answers the request on the loop thread; it must not block.
    ///
    /// Build the router on any thread.
    public mutating func post(_ path: String, _ execution: HTTPInlineExecution,
                              _ handler: @escaping @Sendable (HTTPServerRequest) throws -> HTTPServerResponse) {
        add(.post, path, .sync(handler))
    }

    /// Adds a `POST` route whose handler runs as a task: a `Task` whose executor preference is the
    /// connection's loop (it starts there, no hop), once the body is collected; the connection is not read
    /// while it runs. It may await (`request.loop.process(…)`, another service).
    ///
    /// ```swift
    /// router.post("/todos", .inTask) { request in try await work(request) }
    /// ```
    /// - Parameters:
    ///   - path: The path pattern (`:name` segments bind parameters).
    ///   - execution: ``HTTPTaskExecution/inTask``: the call site says that the handler runs in a task.
    ///   - handler: Answers the request.
    ///
    /// Build the router on any thread.
    public mutating func post(_ path: String, _ execution: HTTPTaskExecution,
                              _ handler: @escaping @Sendable (HTTPServerRequest) async throws -> HTTPServerResponse) {
        add(.post, path, .async(handler))
    }

    /// Adds a `POST` route whose async handler runs as a task, without saying so at the call site:
    /// deprecated, as one `await` added to an inline route's closure picks this form silently.
    ///
    /// - Parameters:
    ///   - path: The path pattern.
    ///   - handler: Answers the request, in a task on the connection's loop.
    ///
    /// Build the router on any thread.
    @available(*, deprecated, message: "this async handler runs in a task on the loop, with the connection's reads paused: say so with post(path, .inTask) { … }, or drop the await to run inline")
    public mutating func post(_ path: String,
                              _ handler: @escaping @Sendable (HTTPServerRequest) async throws -> HTTPServerResponse) {
        add(.post, path, .async(handler))
    }

    // MARK: PUT

    /// Adds a `PUT` route whose handler runs inline: on the connection's loop thread, inside the read
    /// callback that parsed the request, once the body is collected (no task, no allocation).
    ///
    /// ```swift
    /// router.put("/todos/:id") { _ in .text("done") }
    /// ```
    /// - Parameters:
    ///   - path: The path pattern (`:name` segments bind parameters).
    ///   - handler: Answers the request; it must not block.
    ///
    /// Build the router on any thread.
    public mutating func put(_ path: String,
                             _ handler: @escaping @Sendable (HTTPServerRequest) throws -> HTTPServerResponse) {
        add(.put, path, .sync(handler))
    }

    /// Adds a `PUT` route whose handler runs inline, saying so: the same as the form without `.inline`.
    ///
    /// ```swift
    /// router.put("/todos/:id", .inline) { _ in .text("done") }
    /// ```
    /// - Parameters:
    ///   - path: The path pattern (`:name` segments bind parameters).
    ///   - execution: ``HTTPInlineExecution/inline``.
    ///   - handler: Answers the request on the loop thread; it must not block.
    ///
    /// Build the router on any thread.
    public mutating func put(_ path: String, _ execution: HTTPInlineExecution,
                             _ handler: @escaping @Sendable (HTTPServerRequest) throws -> HTTPServerResponse) {
        add(.put, path, .sync(handler))
    }

    /// Adds a `PUT` route whose handler runs as a task: a `Task` whose executor preference is the
    /// connection's loop (it starts there, no hop), once the body is collected; the connection is not read
    /// while it runs. It may await (`request.loop.process(…)`, another service).
    ///
    /// ```swift
    /// router.put("/todos/:id", .inTask) { request in try await work(request) }
    /// ```
    /// - Parameters:
    ///   - path: The path pattern (`:name` segments bind parameters).
    ///   - execution: ``HTTPTaskExecution/inTask``: the call site says that the handler runs in a task.
    ///   - handler: Answers the request.
    ///
    /// Build the router on any thread.
    public mutating func put(_ path: String, _ execution: HTTPTaskExecution,
                             _ handler: @escaping @Sendable (HTTPServerRequest) async throws -> HTTPServerResponse) {
        add(.put, path, .async(handler))
    }

    /// Adds a `PUT` route whose async handler runs as a task, without saying so at the call site:
    /// deprecated, as one `await` added to an inline route's closure picks this form silently.
    ///
    /// - Parameters:
    ///   - path: The path pattern.
    ///   - handler: Answers the request, in a task on the connection's loop.
    ///
    /// Build the router on any thread.
    @available(*, deprecated, message: "this async handler runs in a task on the loop, with the connection's reads paused: say so with put(path, .inTask) { … }, or drop the await to run inline")
    public mutating func put(_ path: String,
                             _ handler: @escaping @Sendable (HTTPServerRequest) async throws -> HTTPServerResponse) {
        add(.put, path, .async(handler))
    }

    // MARK: PATCH

    /// Adds a `PATCH` route whose handler runs inline: on the connection's loop thread, inside the read
    /// callback that parsed the request, once the body is collected (no task, no allocation).
    ///
    /// ```swift
    /// router.patch("/todos/:id") { _ in .text("done") }
    /// ```
    /// - Parameters:
    ///   - path: The path pattern (`:name` segments bind parameters).
    ///   - handler: Answers the request; it must not block.
    ///
    /// Build the router on any thread.
    public mutating func patch(_ path: String,
                               _ handler: @escaping @Sendable (HTTPServerRequest) throws -> HTTPServerResponse) {
        add(.patch, path, .sync(handler))
    }

    /// Adds a `PATCH` route whose handler runs inline, saying so: the same as the form without `.inline`.
    ///
    /// ```swift
    /// router.patch("/todos/:id", .inline) { _ in .text("done") }
    /// ```
    /// - Parameters:
    ///   - path: The path pattern (`:name` segments bind parameters).
    ///   - execution: ``HTTPInlineExecution/inline``.
    ///   - handler: Answers the request on the loop thread; it must not block.
    ///
    /// Build the router on any thread.
    public mutating func patch(_ path: String, _ execution: HTTPInlineExecution,
                               _ handler: @escaping @Sendable (HTTPServerRequest) throws -> HTTPServerResponse) {
        add(.patch, path, .sync(handler))
    }

    /// Adds a `PATCH` route whose handler runs as a task: a `Task` whose executor preference is the
    /// connection's loop (it starts there, no hop), once the body is collected; the connection is not read
    /// while it runs. It may await (`request.loop.process(…)`, another service).
    ///
    /// ```swift
    /// router.patch("/todos/:id", .inTask) { request in try await work(request) }
    /// ```
    /// - Parameters:
    ///   - path: The path pattern (`:name` segments bind parameters).
    ///   - execution: ``HTTPTaskExecution/inTask``: the call site says that the handler runs in a task.
    ///   - handler: Answers the request.
    ///
    /// Build the router on any thread.
    public mutating func patch(_ path: String, _ execution: HTTPTaskExecution,
                               _ handler: @escaping @Sendable (HTTPServerRequest) async throws -> HTTPServerResponse) {
        add(.patch, path, .async(handler))
    }

    /// Adds a `PATCH` route whose async handler runs as a task, without saying so at the call site:
    /// deprecated, as one `await` added to an inline route's closure picks this form silently.
    ///
    /// - Parameters:
    ///   - path: The path pattern.
    ///   - handler: Answers the request, in a task on the connection's loop.
    ///
    /// Build the router on any thread.
    @available(*, deprecated, message: "this async handler runs in a task on the loop, with the connection's reads paused: say so with patch(path, .inTask) { … }, or drop the await to run inline")
    public mutating func patch(_ path: String,
                               _ handler: @escaping @Sendable (HTTPServerRequest) async throws -> HTTPServerResponse) {
        add(.patch, path, .async(handler))
    }

    // MARK: DELETE

    /// Adds a `DELETE` route whose handler runs inline: on the connection's loop thread, inside the read
    /// callback that parsed the request, once the body is collected (no task, no allocation).
    ///
    /// ```swift
    /// router.delete("/todos/:id") { _ in .text("done") }
    /// ```
    /// - Parameters:
    ///   - path: The path pattern (`:name` segments bind parameters).
    ///   - handler: Answers the request; it must not block.
    ///
    /// Build the router on any thread.
    public mutating func delete(_ path: String,
                                _ handler: @escaping @Sendable (HTTPServerRequest) throws -> HTTPServerResponse) {
        add(.delete, path, .sync(handler))
    }

    /// Adds a `DELETE` route whose handler runs inline, saying so: the same as the form without `.inline`.
    ///
    /// ```swift
    /// router.delete("/todos/:id", .inline) { _ in .text("done") }
    /// ```
    /// - Parameters:
    ///   - path: The path pattern (`:name` segments bind parameters).
    ///   - execution: ``HTTPInlineExecution/inline``.
    ///   - handler: Answers the request on the loop thread; it must not block.
    ///
    /// Build the router on any thread.
    public mutating func delete(_ path: String, _ execution: HTTPInlineExecution,
                                _ handler: @escaping @Sendable (HTTPServerRequest) throws -> HTTPServerResponse) {
        add(.delete, path, .sync(handler))
    }

    /// Adds a `DELETE` route whose handler runs as a task: a `Task` whose executor preference is the
    /// connection's loop (it starts there, no hop), once the body is collected; the connection is not read
    /// while it runs. It may await (`request.loop.process(…)`, another service).
    ///
    /// ```swift
    /// router.delete("/todos/:id", .inTask) { request in try await work(request) }
    /// ```
    /// - Parameters:
    ///   - path: The path pattern (`:name` segments bind parameters).
    ///   - execution: ``HTTPTaskExecution/inTask``: the call site says that the handler runs in a task.
    ///   - handler: Answers the request.
    ///
    /// Build the router on any thread.
    public mutating func delete(_ path: String, _ execution: HTTPTaskExecution,
                                _ handler: @escaping @Sendable (HTTPServerRequest) async throws -> HTTPServerResponse) {
        add(.delete, path, .async(handler))
    }

    /// Adds a `DELETE` route whose async handler runs as a task, without saying so at the call site:
    /// deprecated, as one `await` added to an inline route's closure picks this form silently.
    ///
    /// - Parameters:
    ///   - path: The path pattern.
    ///   - handler: Answers the request, in a task on the connection's loop.
    ///
    /// Build the router on any thread.
    @available(*, deprecated, message: "this async handler runs in a task on the loop, with the connection's reads paused: say so with delete(path, .inTask) { … }, or drop the await to run inline")
    public mutating func delete(_ path: String,
                                _ handler: @escaping @Sendable (HTTPServerRequest) async throws -> HTTPServerResponse) {
        add(.delete, path, .async(handler))
    }

    // MARK: Any method

    /// Adds a route whose handler runs inline: on the connection's loop thread, inside the read
    /// callback that parsed the request, once the body is collected (no task, no allocation).
    ///
    /// ```swift
    /// router.on(.put, "/todos/:id") { _ in .text("done") }
    /// ```
    /// - Parameters:
    ///   - method: The method it answers (`.options`, a method of your own, …).
    ///   - path: The path pattern (`:name` segments bind parameters).
    ///   - handler: Answers the request; it must not block.
    ///
    /// Build the router on any thread.
    public mutating func on(_ method: HTTPRequest.Method, _ path: String,
                            _ handler: @escaping @Sendable (HTTPServerRequest) throws -> HTTPServerResponse) {
        add(method, path, .sync(handler))
    }

    /// Adds a route whose handler runs inline, saying so: the same as the form without `.inline`.
    ///
    /// ```swift
    /// router.on(.put, "/todos/:id", .inline) { _ in .text("done") }
    /// ```
    /// - Parameters:
    ///   - method: The method it answers (`.options`, a method of your own, …).
    ///   - path: The path pattern (`:name` segments bind parameters).
    ///   - execution: ``HTTPInlineExecution/inline``.
    ///   - handler: Answers the request on the loop thread; it must not block.
    ///
    /// Build the router on any thread.
    public mutating func on(_ method: HTTPRequest.Method, _ path: String, _ execution: HTTPInlineExecution,
                            _ handler: @escaping @Sendable (HTTPServerRequest) throws -> HTTPServerResponse) {
        add(method, path, .sync(handler))
    }

    /// Adds a route whose handler runs as a task: a `Task` whose executor preference is the
    /// connection's loop (it starts there, no hop), once the body is collected; the connection is not read
    /// while it runs. It may await (`request.loop.process(…)`, another service).
    ///
    /// ```swift
    /// router.on(.put, "/todos/:id", .inTask) { request in try await work(request) }
    /// ```
    /// - Parameters:
    ///   - method: The method it answers (`.options`, a method of your own, …).
    ///   - path: The path pattern (`:name` segments bind parameters).
    ///   - execution: ``HTTPTaskExecution/inTask``: the call site says that the handler runs in a task.
    ///   - handler: Answers the request.
    ///
    /// Build the router on any thread.
    public mutating func on(_ method: HTTPRequest.Method, _ path: String, _ execution: HTTPTaskExecution,
                            _ handler: @escaping @Sendable (HTTPServerRequest) async throws -> HTTPServerResponse) {
        add(method, path, .async(handler))
    }

    /// Adds a route whose async handler runs as a task, without saying so at the call site:
    /// deprecated, as one `await` added to an inline route's closure picks this form silently.
    ///
    /// - Parameters:
    ///   - method: The method it answers (`.options`, a method of your own, …).
    ///   - path: The path pattern.
    ///   - handler: Answers the request, in a task on the connection's loop.
    ///
    /// Build the router on any thread.
    @available(*, deprecated, message: "this async handler runs in a task on the loop, with the connection's reads paused: say so with on(method, path, .inTask) { … }, or drop the await to run inline")
    public mutating func on(_ method: HTTPRequest.Method, _ path: String,
                            _ handler: @escaping @Sendable (HTTPServerRequest) async throws -> HTTPServerResponse) {
        add(method, path, .async(handler))
    }
}
