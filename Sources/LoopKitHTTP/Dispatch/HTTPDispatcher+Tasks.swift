import HTTPTypes
import Logging
import LoopKit

// Every task a request starts, side by side. Each starts through ``HTTPLoopContext/startTask(_:)`` (on the
// stream's loop, with the server's graceful shutdown bound as its task-local), each comes back to the
// loop through ``HTTPStream/onLoop(_:)`` before it touches the stream, and each turns what escapes
// the handler into a response in the same way (``answer(_:path:logger:renderer:)``, `HTTPDispatcher+Errors.swift`).
// The tasks a protocol upgraded to starts (a WebSocket route's handler) are its own: `WebSocketUpgrader`.

extension HTTPDispatcher {
    /// 1. An async route, its body collected: counted in ``HTTPLoopContext/handlerTasksInFlight`` until it
    /// answers. The codec has paused reading (pipelined requests wait).
    static func runAsyncHandler(_ run: @escaping @Sendable (HTTPServerRequest) async throws -> HTTPServerResponse,
                                _ request: HTTPServerRequest, on stream: some HTTPStream) {
        let logger = stream.context.logger
        let renderer = stream.context.configuration.errorRenderer
        stream.context.handlerTasksInFlight += 1
        stream.context.startTask {
            let response: HTTPServerResponse
            do {
                response = try await run(request)
            } catch {
                response = answering(error, path: request.path, logger: logger, renderer: renderer)
            }
            stream.onLoop { stream in
                stream.context.handlerTasksInFlight -= 1
                send(response, on: stream)
            }
        }
    }

    /// 2. A streaming route, from its head: it reads the body as it arrives.
    static func runStreamingHandler(_ run: @escaping @Sendable (HTTPServerRequest, HTTPRequestBody) async throws -> HTTPServerResponse,
                                    _ request: HTTPServerRequest, body: HTTPRequestBody, on stream: some HTTPStream) {
        let logger = stream.context.logger
        let renderer = stream.context.configuration.errorRenderer
        stream.context.startTask {
            let response: HTTPServerResponse?
            do {
                response = try await run(request, body)
            } catch {
                response = answer(error, path: request.path, logger: logger, renderer: renderer)
            }
            if let response { stream.onLoop { send(response, on: $0) } }
        }
    }

    /// 3. The middleware chain as a task (an async middleware, an async or streaming route behind any);
    /// its response is sent when it returns (none for a body error already answered, or a client gone).
    /// `bodyCollected`: counted in ``HTTPLoopContext/handlerTasksInFlight`` until it answers (a streaming
    /// route's chain waits for the client's body, not for another thread).
    static func runChain(_ request: HTTPServerRequest, middleware: HTTPMiddlewareChain,
                         terminal: @escaping @Sendable (HTTPServerRequest) async throws -> HTTPServerResponse,
                         bodyCollected: Bool = false, on stream: some HTTPStream) {
        let trail = HTTPMiddlewareChain.Trail(chain: middleware)
        stream.exchange!.makeExtras().asyncTrail = trail
        let logger = stream.context.logger
        let renderer = stream.context.configuration.errorRenderer
        if bodyCollected { stream.context.handlerTasksInFlight += 1 }
        stream.context.startTask {
            let response = await respond(to: request, through: middleware, trail: trail, logger: logger, renderer: renderer, terminal: terminal)
            if bodyCollected {
                stream.onLoop { stream in
                    stream.context.handlerTasksInFlight -= 1
                    if let response { send(response, on: stream) }
                }
            } else if let response {
                stream.onLoop { send(response, on: $0) }
            }
        }
    }

    /// 4. An upgrade whose route is asked (``HTTPUpgrader/shouldUpgrade(_:)``), with no middleware: the
    /// upgrade, or the route's refusal, comes back to the loop.
    static func askRoute<Upgrader: HTTPUpgrader>(_ request: HTTPServerRequest, upgrader: Upgrader,
                                                 acceptance: Upgrader.Acceptance, on stream: some HTTPStream) {
        let logger = stream.context.logger
        let renderer = stream.context.configuration.errorRenderer
        stream.context.startTask {
            let decision: HTTPUpgradeDecision
            do {
                decision = try await upgrader.shouldUpgrade(request)
            } catch {
                decision = .refuse(answering(error, path: request.path, logger: logger, renderer: renderer))
            }
            switch decision {
            case .refuse(let response):
                stream.onLoop { send(response, on: $0) }
            case .accept(let fields):
                stream.onLoop { upgradeAccepted(request, upgrader: upgrader, acceptance: acceptance, fields: fields, on: $0) }
            }
        }
    }

    /// 5. An upgrade behind middleware: the chain runs, its terminal checks the head's verdict and asks the
    /// route, and answers `101` (with the route's fields) to accept. When what comes out is a `101`, the
    /// stream upgrades with the request as the middleware passed it on; any other response is sent.
    static func runUpgradeChain<Upgrader: HTTPUpgrader>(_ request: HTTPServerRequest, upgrader: Upgrader,
                                                        check: HTTPUpgradeCheck<Upgrader.Acceptance>,
                                                        middleware: HTTPMiddlewareChain, on stream: some HTTPStream) {
        let acceptance: Upgrader.Acceptance?
        let refusal: HTTPServerResponse?
        switch check {
        case .accepted(let accepted):
            acceptance = accepted
            refusal = nil
        case .refused(let response):  // answered through the middleware, as the route's refusal
            acceptance = nil
            refusal = response
        }
        let trail = HTTPMiddlewareChain.Trail(chain: middleware)
        stream.exchange!.makeExtras().asyncTrail = trail
        let logger = stream.context.logger
        let renderer = stream.context.configuration.errorRenderer
        stream.context.startTask {
            let response = await respond(to: request, through: middleware, trail: trail, logger: logger, renderer: renderer) { request in
                if let refusal { return refusal }
                let decision = upgrader.asksRoute ? try await upgrader.shouldUpgrade(request) : .accept([:])
                switch decision {
                case .refuse(let response): return response
                case .accept(let fields): return HTTPServerResponse(status: .switchingProtocols, headerFields: fields)
                }
            }
            guard let response else { return }
            guard response.status == .switchingProtocols else {
                stream.onLoop { send(response, on: $0) }
                return
            }
            guard let acceptance else {  // a middleware answered 101 to a request that is no upgrade
                stream.onLoop { send(renderer.response(for: .init(status: .internalServerError)), on: $0) }
                return
            }
            let upgradedRequest = trail.state.withLock { $0.request } ?? request
            let fields = response.headerFields
            stream.onLoop {
                upgradeAccepted(upgradedRequest, upgrader: upgrader, acceptance: acceptance, fields: fields, on: $0)
            }
        }
    }

    /// 6. A streamed response body: the route's writer runs as a task while the codec frames what it
    /// writes; when it returns the codec ends the body, when it throws the stream is aborted (an event
    /// stream that graceful shutdown ended is ended cleanly instead).
    static func writeBody(_ write: @escaping @Sendable (HTTPBodyWriter) async throws -> Void, to writer: HTTPBodyWriter,
                          watchesClient: Bool, on stream: some HTTPStream) {
        stream.exchange!.streamsEvents = watchesClient
        stream.exchange!.responseTask = stream.context.startTask {
            do {
                try await write(writer)
                stream.onLoop { bodyWritten(writer, on: $0) }
            } catch {
                stream.onLoop { stream in
                    if stream.exchange?.eventStreamEndedByShutdown == true {  // the server stops: the stream ends cleanly
                        bodyWritten(writer, on: stream)
                    } else if stream.isClosed {  // the client went away: the writer learnt it, nothing failed
                        stream.context.logger.debug("streamed body ended: client gone", metadata: ["error": "\(error)"])
                    } else {
                        stream.context.logger.error("streamed body failed", metadata: ["error": "\(error)"])
                    }
                    stream.abort()
                }
            }
        }
    }

    /// The streamed body's writer returned: the codec ends the body (and with it the response).
    private static func bodyWritten(_ writer: HTTPBodyWriter, on stream: some HTTPStream) {
        stream.exchange?.responseTask = nil
        stream.exchange?.streamsEvents = false
        stream.finishStreamedBody(writer)
    }

    /// A callback-form streaming route behind middleware: the chain's terminal, which starts the handler on
    /// the loop and waits for its responder (``HTTPResponseSlot``).
    static func awaitingResponder(_ run: @escaping @Sendable (HTTPServerRequest, HTTPRequestBody, HTTPResponder) -> Void,
                                  body: HTTPRequestBody, on stream: some HTTPStream)
        -> @Sendable (HTTPServerRequest) async throws -> HTTPServerResponse {
        { request in
            try await withCheckedThrowingContinuation { continuation in
                stream.onLoop { stream in
                    guard !stream.isClosed else {
                        continuation.resume(throwing: HTTPBodyError.connectionClosed)
                        return
                    }
                    let slot = HTTPResponseSlot(continuation)
                    if stream.exchange != nil { stream.exchange!.makeExtras().responseSlot = slot }
                    run(request, body, stream.responder(slot: slot))
                }
            }
        }
    }
}
