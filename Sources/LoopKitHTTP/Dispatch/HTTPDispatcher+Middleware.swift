import HTTPTypes
import Logging
import LoopKit

extension HTTPDispatcher {
    /// An inline chain and a synchronous terminal, run now; the response is sent at once. The request is
    /// moved through the chain and into the trail, not copied at each step (a copy retains every field,
    /// the loop and the server context among them). Loop thread.
    static func runInline(_ request: consuming HTTPServerRequest, middleware: HTTPMiddlewareChain,
                          terminal: (HTTPServerRequest) throws -> HTTPServerResponse, on stream: some HTTPStream) {
        var trail: HTTPMiddlewareChain.InlineTrail?
        let response: HTTPServerResponse
        do {
            response = try middleware.runInline(request, trail: &trail, terminal: terminal)
        } catch {
            response = answering(error, path: trail.map { $0.request.path } ?? "?", logger: stream.context.logger,
                                 renderer: stream.context.configuration.errorRenderer)
        }
        if let trail, stream.exchange != nil { stream.exchange!.makeExtras().middlewareTrail = trail }
        send(response, on: stream)
    }

    /// An inline chain and an ``HTTPInlineOrTaskRoute``: the chain's requests run now, and the route's
    /// inline answer goes back out through it at once; when the route cannot answer inline, its task
    /// answers (the codec pauses reading meanwhile, as for an async route) and the response goes out
    /// through the same middleware, each given the request it passed on, back on the loop. Loop thread.
    static func runInlineOrTask(_ request: consuming HTTPServerRequest, middleware: HTTPMiddlewareChain,
                                route: HTTPInlineOrTaskRoute, on stream: some HTTPStream) {
        var trail: HTTPMiddlewareChain.InlineTrail?
        let outcome: HTTPMiddlewareChain.InlineOutcome
        do {
            outcome = try middleware.runInlineOrDefer(request, trail: &trail, terminal: route.inline)
        } catch {
            outcome = .answered(answering(error, path: trail.map { $0.request.path } ?? "?", logger: stream.context.logger,
                                          renderer: stream.context.configuration.errorRenderer))
        }
        if let trail, stream.exchange != nil { stream.exchange!.makeExtras().middlewareTrail = trail }
        switch outcome {
        case .answered(let response):
            send(response, on: stream)
        case .deferred(let deferred):
            stream.pauseReading()
            let logger = stream.context.logger
            let renderer = stream.context.configuration.errorRenderer
            stream.context.handlerTasksInFlight += 1
            stream.context.startTask {
                let response: HTTPServerResponse
                let answered: Bool
                do {
                    response = try await route.inTask(deferred.request)
                    answered = true
                } catch {  // an error skips the middleware's handleResponse, as in a chain run in a task
                    response = answering(error, path: deferred.request.path, logger: logger, renderer: renderer)
                    answered = false
                }
                stream.onLoop { stream in
                    stream.context.handlerTasksInFlight -= 1
                    var response = response
                    if answered { deferred.unwind(&response) }
                    send(response, on: stream)
                }
            }
        }
    }

    /// Runs the chain and turns what escapes it into the answer (``answer(_:path:logger:renderer:)``).
    static func respond(to request: HTTPServerRequest, through middleware: HTTPMiddlewareChain,
                        trail: HTTPMiddlewareChain.Trail, logger: Logger, renderer: HTTPErrorRenderer,
                        terminal: @escaping @Sendable (HTTPServerRequest) async throws -> HTTPServerResponse) async -> HTTPServerResponse? {
        do {
            return try await middleware.run(request, from: 0, trail: trail, terminal: terminal)
        } catch {
            return answer(error, path: request.path, logger: logger, renderer: renderer)
        }
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
