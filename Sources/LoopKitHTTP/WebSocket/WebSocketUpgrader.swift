import HTTPTypes
import Logging
import LoopKit
import LoopKitNet

/// The WebSocket upgrade (RFC 6455 §4.2) of a `router.webSocket(…)` route, through the connection's
/// generic upgrade path: the handshake checked (``WebSocketHandshake``), permessage-deflate negotiated
/// when the route allows it, the route's `shouldUpgrade` asked, the `101` with `Sec-WebSocket-Accept`,
/// and the take-over by a ``WebSocket`` whose engine becomes the TCP connection's handler.
///
/// A value made per request from the route (nothing is stored per connection): safe from any thread.
struct WebSocketUpgrader: HTTPUpgrader {
    /// An accepted handshake: the client's key and the extension negotiated, if any (a second
    /// ``WebSocketExtension`` is negotiated here too, and gets a case in ``WebSocketNegotiatedExtension``).
    struct Acceptance: Sendable {
        var key: String
        var deflate: PerMessageDeflate?
    }

    let route: WebSocketRoute
    /// The handler the route's `accepting` check returns, bound to its value (routes with one only).
    let accepted: AcceptedHandler?
    /// What writes the body of a handshake the server refuses (the server's configured renderer).
    let renderer: HTTPErrorRenderer

    init(route: WebSocketRoute, renderer: HTTPErrorRenderer = .plainText) {
        self.route = route
        self.renderer = renderer
        accepted = route.accepting == nil ? nil : AcceptedHandler()
    }

    func check(_ head: HTTPRequestHead) -> HTTPUpgradeCheck<Acceptance> {
        switch WebSocketHandshake.validate(head.request, version: head.version, framing: head.framing) {
        case .failure(let refusal):
            return .refused(refusal.response(renderer))
        case .success(let key):
            let offers = head.request.headerFields[values: WebSocketHandshake.extensionsField]
            return .accepted(Acceptance(key: key, deflate: PerMessageDeflate.negotiate(offers, configuration: route.configuration)))
        }
    }

    var asksRoute: Bool { route.shouldUpgrade != nil || route.accepting != nil }

    var shortestDeadline: Duration? { route.configuration.shortestDeadline }

    func shouldUpgrade(_ request: HTTPServerRequest) async throws -> HTTPUpgradeDecision {
        if let accepting = route.accepting, let accepted {  // looked up once: the handler is bound to it
            accepted.store(try await accepting(request))
            return .accept([:])
        }
        guard let shouldUpgrade = route.shouldUpgrade else { return .accept([:]) }
        let decision = try await shouldUpgrade(request)
        // `.refuse(status:)` is answered as a thrown HTTPError of that status is: by the error renderer.
        if let status = decision.renderedRefusal { throw HTTPError(status) }
        return decision.kind
    }

    func switchingProtocols(_ acceptance: Acceptance, fields: HTTPFields) -> [UInt8] {
        WebSocketHandshake.switchingProtocols(acceptValue: WebSocketHandshake.acceptValue(forKey: acceptance.key),
                                              extensions: acceptance.deflate?.responseValue, extraFields: fields)
    }

    /// The socket's engine, which keeps the handle and the server's context while the connection is
    /// open (``ServedWebSocket``).
    func takeOver(_ tcp: Connection, acceptance: Acceptance, context: HTTPLoopContext) -> WebSocketCore {
        let negotiated = acceptance.deflate.map { WebSocketNegotiatedExtension.perMessageDeflate($0.makeCodec()) }
        let socket = WebSocket(tcp: tcp, configuration: route.configuration, extension: negotiated)
        let core = socket.core.value
        core.served = ServedWebSocket(handle: socket, context: context)
        return core
    }

    /// Starts the keep-alive pings and runs the route's handler: a callback handler now, an async one in
    /// a task of its own (``runHandler(_:request:socket:loop:logger:)``).
    func start(_ core: WebSocketCore, request: HTTPServerRequest, context: HTTPLoopContext) {
        guard let socket = core.served?.handle else { return }  // ended already
        core.startKeepAlivePings()
        var handler = route.handler
        if case .accepted = handler {
            guard let bound = accepted?.take() else { return socket.close(code: .internalServerError) }  // never: asked first
            handler = bound
        }
        switch handler {
        case .callback(let run):
            run(request, socket)
        case .async(let run):
            Self.runHandler(run, request: request, socket: socket, loop: context.loop, logger: context.logger)
        case .accepted:
            socket.close(code: .internalServerError)  // never: a check returns an .async or a .callback handler
        }
    }

    /// Runs an async WebSocket handler as a task on `loop`, and closes the socket when it returns (with
    /// `1011` when it threw).
    ///
    /// The task's own frame stays small, as its frame is kept while the handler waits: the task holds the
    /// handler, its arguments, the loop and the logger, and what follows the handler (the log line, the
    /// close) is ``handlerEnded(_:request:error:loop:logger:)``, not async. With that work in the task's
    /// frame, the frame took so much of the task allocator's first slab that the handler's frames needed
    /// a second (1 KiB more per idle WebSocket).
    private static func runHandler(_ run: @escaping @Sendable (HTTPServerRequest, WebSocket) async throws -> Void,
                                   request: HTTPServerRequest, socket: WebSocket, loop: EventLoop, logger: Logger) {
        Task(executorPreference: loop) {
            let failure: (any Error)?
            do {
                try await run(request, socket)
                failure = nil
            } catch {
                failure = error
            }
            handlerEnded(socket, request: request, error: failure, loop: loop, logger: logger)
        }
    }

    /// An async handler returned (`error` nil) or threw: closes `socket` with `1000` or `1011` through
    /// `loop.invoke`, at once on the loop's thread (where a handler's task runs, by its executor
    /// preference), else queued.
    private static func handlerEnded(_ socket: WebSocket, request: HTTPServerRequest, error: (any Error)?, loop: EventLoop,
                                     logger: Logger) {
        var code = WebSocketCloseCode.normalClosure
        if let error {
            logger.error("WebSocket handler failed", metadata: ["path": "\(request.path)", "error": "\(error)"])
            code = .internalServerError
        }
        do {
            try loop.invoke { [code] in socket.close(code: code) }
        } catch {
            // The loop shut down, and the connection with it.
        }
    }
}
