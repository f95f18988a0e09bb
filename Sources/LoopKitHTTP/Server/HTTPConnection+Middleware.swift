import HTTPTypes
import Logging
import LoopKit
import LoopKitNet

extension HTTPConnection {
    /// Runs a request whose body was collected through the router's middleware: inline, inside the
    /// read callback, when every middleware is inline and the route is synchronous (or there is no
    /// route); as a task on the loop otherwise. Loop thread.
    /// The head is read in place (`self.head`, set while the request is answered), not copied.
    func dispatchThroughMiddleware(body: Bytes, middleware: HTTPMiddlewareChain) {
        let route = self.route.take()
        let request = HTTPServerRequest(head: head!.request, version: head!.version, body: body,
                                        parameters: route?.parameters ?? HTTPPathParameters(), loop: context.loop,
                                        context: requestContext!, server: context)
        let terminal: @Sendable (HTTPServerRequest) async throws -> HTTPServerResponse
        switch route?.handler {
        case nil:
            let answer = Self.response(for: unrouted)
            if middleware.isInline {
                runInline(consume request, middleware: middleware) { _ in answer }
                return
            }
            terminal = { _ in answer }
        case .sync(let run)?:
            if middleware.isInline {
                runInline(consume request, middleware: middleware, terminal: run)
                return
            }
            terminal = { request in try run(request) }
        case .async(let run)?:
            terminal = run
        case .webSocket(let webSocketRoute)?:
            upgradeRequested(request, head: head!, upgrader: WebSocketUpgrader(route: webSocketRoute), middleware: middleware)
            return
        case .upgrade(let upgradeRoute)?:
            upgradeRoute.upgrader.requested(request, head: head!, on: self, middleware: middleware)
            return
        case .streaming?, .streamingCallback?:
            return  // started at the head
        }
        tcp.pauseReading()
        runAsync(request, middleware: middleware, terminal: terminal, bodyCollected: true)
    }

    /// An inline chain and a synchronous terminal, run now; the response is sent at once. The request is
    /// moved through the chain and into the trail, not copied at each step (a copy retains every field,
    /// the loop and the server context among them).
    private func runInline(_ request: consuming HTTPServerRequest, middleware: HTTPMiddlewareChain,
                           terminal: (HTTPServerRequest) throws -> HTTPServerResponse) {
        var trail: HTTPMiddlewareChain.InlineTrail?
        let response: HTTPServerResponse
        do {
            response = try middleware.runInline(request, trail: &trail, terminal: terminal)
        } catch {
            response = .answering(error, path: trail.map { $0.request.path } ?? "?", logger: context.logger)
        }
        if let trail { setMiddlewareTrail(trail) }
        send(response)
    }

    /// The chain as a task on the loop; its response is sent when it returns (none for a body error
    /// already answered, or a client gone).
    /// `bodyCollected`: counted in ``HTTPLoopContext/handlerTasksInFlight`` until it answers (a streaming
    /// route's chain waits for the client's body, not for another thread).
    func runAsync(_ request: HTTPServerRequest, middleware: HTTPMiddlewareChain,
                  terminal: @escaping @Sendable (HTTPServerRequest) async throws -> HTTPServerResponse,
                  bodyCollected: Bool = false) {
        let trail = HTTPMiddlewareChain.Trail(chain: middleware)
        asyncTrail = trail
        let logger = context.logger
        if bodyCollected { context.handlerTasksInFlight += 1 }
        context.startTask {
            let response = await Self.respond(to: request, through: middleware, trail: trail, logger: logger, terminal: terminal)
            if bodyCollected {
                self.onLoop { connection in
                    connection.context.handlerTasksInFlight -= 1
                    if let response { connection.send(response) }
                }
            } else if let response {
                self.onLoop { $0.send(response) }
            }
        }
    }

    /// Runs the chain and turns what escapes it into the answer: 500 for an error, 413 or nothing for a
    /// body error.
    static func respond(to request: HTTPServerRequest, through middleware: HTTPMiddlewareChain,
                        trail: HTTPMiddlewareChain.Trail, logger: Logger,
                        terminal: @escaping @Sendable (HTTPServerRequest) async throws -> HTTPServerResponse) async -> HTTPServerResponse? {
        do {
            return try await middleware.run(request, from: 0, trail: trail, terminal: terminal)
        } catch let error as HTTPBodyError {
            return response(for: error)
        } catch {
            return .answering(error, path: request.path, logger: logger)
        }
    }

    /// A streaming route behind middleware, at its head: the chain runs as a task on the loop and its
    /// terminal starts the handler (a callback-form handler answers through its responder into the
    /// chain). Loop thread.
    func streamingThroughMiddleware(_ request: HTTPServerRequest, body: HTTPRequestBody, handler: HTTPHandler,
                                    middleware: HTTPMiddlewareChain) {
        let terminal: @Sendable (HTTPServerRequest) async throws -> HTTPServerResponse
        switch handler {
        case .streaming(_, let run):
            terminal = { request in try await run(request, body) }
        case .streamingCallback(_, let run):
            terminal = { request in
                try await withCheckedThrowingContinuation { continuation in
                    self.onLoop { connection in
                        guard !connection.isClosed else {
                            continuation.resume(throwing: HTTPBodyError.connectionClosed)
                            return
                        }
                        let slot = HTTPResponseSlot(continuation)
                        connection.responseSlot = slot
                        run(request, body, HTTPResponder(connection: connection, slot: slot))
                    }
                }
            }
        default:
            return
        }
        runAsync(request, middleware: middleware, terminal: terminal)
    }
}

/// Where a callback-form streaming route's responder delivers its response when middleware wait for
/// it: resumes the chain's task once (later responses are dropped, as a connection drops them).
final class HTTPResponseSlot: Sendable {
    private let continuation: Lock<CheckedContinuation<HTTPServerResponse, any Error>?>

    init(_ continuation: CheckedContinuation<HTTPServerResponse, any Error>) {
        self.continuation = Lock(continuation)
    }

    func resume(_ result: Result<HTTPServerResponse, any Error>) {
        let continuation = self.continuation.withLock { slot in
            defer { slot = nil }
            return slot
        }
        continuation?.resume(with: result)
    }
}
