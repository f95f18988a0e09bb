import HTTPTypes
import Logging
import LoopKit
import LoopKitHTTP
import LoopKitNet
import LoopKitTLS
import LoopKitTesting

/// A client for testing HTTP routes: in memory on a stepped loop (deterministic, virtual time) or live
/// over a real socket, with one API so one test body runs both ways.
///
/// ```swift
/// @Test(arguments: HTTPTestMode.allCases)
/// func helloAnswers(mode: HTTPTestMode) throws {
///     let client = try HTTPTestClient(router: DemoRoutes.router(work: .none), mode: mode)
///     let response = try client.execute(.get, "/hello")
///     #expect(response.status == .ok)
///     #expect(response.text == "Hello, World!")
/// }
/// ```
///
/// In memory (``HTTPTestMode/inMemory``), the router runs on a ``LoopDriver``'s loop exactly as on a
/// server's loop (parser, limits, timeouts, async handlers as tasks on the loop), fed through an
/// in-memory connection pair. Nothing happens between calls: ``send(_:)-([UInt8])`` only queues bytes,
/// ``nextResponse(isHeadRequest:)`` steps iterations until a whole response has arrived, ``step()`` runs
/// one iteration, and ``advance(by:)`` moves virtual time so the server's timeouts fire. The same test
/// gives the same trace every run. Live (``HTTPTestMode/live``), an ``HTTPServer`` serves the router on
/// 127.0.0.1 on a loop thread of its own and the client speaks to it through a socket; waiting means
/// waiting for bytes (at most 10 s, a hung test's safety net), and ``advance(by:)`` lets real time pass.
///
/// **Thread rule.** Not `Sendable`: use a client from one task or thread at a time. A client made without a
/// driver lives on a thread of its own: call it from any thread, before or after an `await` (an `async`
/// Swift Testing test moves between threads at each one). Its synchronous methods wait for that thread; in
/// `async` code, the `async` forms (`try await client.execute(…)`) suspend instead, and Swift picks them
/// there. A client made with ``init(router:configuration:driver:logger:)`` shares the test's driver, and so
/// its thread: call it on the thread that made the driver (a synchronous test, or before the first `await`);
/// called elsewhere it throws ``HTTPTestClientError/wrongThread(_:)``. It shuts its server down when
/// released, or at ``shutDown()``.
public final class HTTPTestClient {
    /// How this client reaches the routes.
    public let mode: HTTPTestMode
    let transport: any HTTPTestTransport
    /// Received and not yet read as a response.
    var buffer: [UInt8] = []
    /// The event stream ``nextEvent()`` is reading, from its head to its end.
    var eventStream: EventStreamReader?

    /// A client for the routes of `router`, served with `configuration`'s limits and timeouts.
    ///
    /// - Parameters:
    ///   - router: The routes under test.
    ///   - configuration: Limits, timeouts and watermarks (the address is ignored: live mode listens on
    ///     127.0.0.1, port 0).
    ///   - mode: In memory (the default) or live, over HTTP/1.1 or HTTP/2 (``HTTPTestMode``).
    ///   - logger: The server's logger (silent by default).
    /// - Throws: ``HTTPTestClientError/cannotStart(_:)``.
    public init(router: HTTPRouter, configuration: HTTPServer.Configuration = HTTPServer.Configuration(),
                mode: HTTPTestMode = .inMemory,
                logger: Logger = Logger(label: "loopkit.http.test", factory: { _ in SwiftLogNoOpLogHandler() })) throws {
        self.mode = mode
        do {
            transport = try HomedTransport {
                switch mode {
                case .inMemory: try InMemoryTransport(router: router, configuration: configuration, logger: logger)
                case .live: try LiveTransport(router: router, configuration: configuration, logger: logger)
                case .inMemoryHTTP2:
                    try HTTP2Transport(over: InMemoryTransport(router: router, configuration: Self.checkedHTTP2(configuration), logger: logger))
                case .liveHTTP2:
                    try HTTP2Transport(over: LiveTransport(router: router, configuration: Self.checkedHTTP2(configuration), logger: logger))
                }
            }
        } catch let error as HTTPTestClientError {
            throw error
        } catch {
            throw HTTPTestClientError.cannotStart("\(error)")
        }
    }

    /// A client whose routes run on the test's loops, the loops their state is bound to, as in production.
    ///
    /// ```swift
    /// let group = try LoopGroup(threads: 2)            // as production's
    /// let app = TodoApp(group: group)                   // its state bound to the group's loops
    /// let first = try HTTPTestClient(router: app.router, mode: mode, group: group)    // served on loop 0
    /// let second = try HTTPTestClient(router: app.router, mode: mode, group: group)   // on loop 1
    /// ```
    ///
    /// In memory (``HTTPTestMode/inMemory``), the routes are served on `group.next()` through an in-memory
    /// connection pair (successive clients of one group take its loops in turn, so two clients see both
    /// loops of a two-loop group): no socket, but the group's real threads and real time, so the client
    /// waits for what arrives as a live one does and ``advance(by:)`` lets real time pass. Live
    /// (``HTTPTestMode/live``), an ``HTTPServer`` serves the routes on every loop of `group`, on 127.0.0.1,
    /// port 0. The group stays the test's: the client does not shut it down (shut it down after the
    /// clients).
    ///
    /// - Parameters:
    ///   - router: The routes under test.
    ///   - configuration: Limits, timeouts and watermarks (the address is ignored).
    ///   - mode: In memory (the default) or live, over HTTP/1.1 or HTTP/2 (``HTTPTestMode``).
    ///   - group: The loops to serve on.
    ///   - logger: The server's logger (silent by default).
    /// - Throws: ``HTTPTestClientError/cannotStart(_:)``.
    public init(router: HTTPRouter, configuration: HTTPServer.Configuration = HTTPServer.Configuration(),
                mode: HTTPTestMode = .inMemory, group: LoopGroup,
                logger: Logger = Logger(label: "loopkit.http.test", factory: { _ in SwiftLogNoOpLogHandler() })) throws {
        self.mode = mode
        do {
            transport = try HomedTransport {
                switch mode {
                case .inMemory: try GroupInMemoryTransport(router: router, configuration: configuration, group: group, logger: logger)
                case .live: try LiveTransport(router: router, configuration: configuration, group: group, logger: logger)
                case .inMemoryHTTP2:
                    try HTTP2Transport(over: GroupInMemoryTransport(router: router, configuration: Self.checkedHTTP2(configuration),
                                                                    group: group, logger: logger))
                case .liveHTTP2:
                    try HTTP2Transport(over: LiveTransport(router: router, configuration: Self.checkedHTTP2(configuration),
                                                           group: group, logger: logger))
                }
            }
        } catch let error as HTTPTestClientError {
            throw error
        } catch {
            throw HTTPTestClientError.cannotStart("\(error)")
        }
    }

    /// An in-memory client whose routes run on `driver`'s loop: the loop the test bound the routes' state
    /// to, and that other clients may share (two WebSocket clients of one chat room, say). Deterministic,
    /// on the driver's virtual time, as ``init(router:configuration:mode:logger:)`` in memory.
    ///
    /// ```swift
    /// let driver = try LoopDriver()
    /// let room = LoopBound(ChatRoom(), on: driver.loop)
    /// let alice = try HTTPTestClient(router: chatRouter(room), driver: driver)
    /// let bob = try HTTPTestClient(router: chatRouter(room), driver: driver)
    /// ```
    ///
    /// - Parameters:
    ///   - router: The routes under test.
    ///   - configuration: Limits, timeouts and watermarks.
    ///   - driver: The driver whose loop serves the routes; the client steps it. Create the client on the
    ///     driver's thread.
    ///   - logger: The server's logger (silent by default).
    /// - Throws: ``HTTPTestClientError/cannotStart(_:)``.
    public init(router: HTTPRouter, configuration: HTTPServer.Configuration = HTTPServer.Configuration(),
                driver: LoopDriver,
                logger: Logger = Logger(label: "loopkit.http.test", factory: { _ in SwiftLogNoOpLogHandler() })) throws {
        mode = .inMemory
        do {
            transport = try InMemoryTransport(router: router, configuration: configuration, driver: driver, logger: logger)
        } catch {
            throw HTTPTestClientError.cannotStart("\(error)")
        }
    }

    /// An in-memory client that speaks HTTPS: the server end presents `configuration.tls` and this client
    /// checks it with `clientTLS`, over OpenSSL running on memory (the same handshake, records and
    /// alerts as on a socket), on a stepped loop and virtual time. The handshake is done when it returns.
    ///
    /// ```swift
    /// var configuration = HTTPServer.Configuration()
    /// configuration.tls = try TLSContext(.server(certificateChain: .file(chain), privateKey: .file(key)))
    /// let client = try HTTPTestClient(router: router, configuration: configuration,
    ///                                 clientTLS: try TLSContext(.client(trustRoots: .certificates(.file(ca)))))
    /// let response = try client.execute(.get, "/hello")   // over TLS 1.3, ALPN http/1.1
    /// ```
    ///
    /// - Parameters:
    ///   - router: The routes under test.
    ///   - configuration: Limits and timeouts, and `tls`: the server's context (required).
    ///   - clientTLS: The client's context: what it trusts, what it offers.
    ///   - serverName: The name the client asks for and checks (`localhost` by default).
    ///   - logger: The server's logger (silent by default).
    /// - Throws: ``HTTPTestClientError/cannotStart(_:)``: without `configuration.tls`, or when the handshake
    ///   fails (with OpenSSL's reason: a certificate the client does not trust, say).
    public init(router: HTTPRouter, configuration: HTTPServer.Configuration, clientTLS: TLSContext, serverName: String = "localhost",
                logger: Logger = Logger(label: "loopkit.http.test", factory: { _ in SwiftLogNoOpLogHandler() })) throws {
        mode = .inMemory
        guard configuration.tls != nil else {
            throw HTTPTestClientError.cannotStart("HTTPS in memory needs configuration.tls, the server's TLS context")
        }
        do {
            transport = try HomedTransport {
                try InMemoryTransport(router: router, configuration: configuration, clientTLS: clientTLS, serverName: serverName,
                                      logger: logger)
            }
        } catch {
            throw HTTPTestClientError.cannotStart("\(error)")
        }
    }

    /// A client for an ``HTTPServer``'s routes and configuration. The server itself is not started: in
    /// memory its router runs on the driver's loop; live, a second server like it listens on port 0.
    ///
    /// - Parameters:
    ///   - server: The server whose router and configuration to use.
    ///   - mode: In memory (the default) or live, over HTTP/1.1 or HTTP/2 (``HTTPTestMode``).
    /// - Throws: ``HTTPTestClientError/cannotStart(_:)``.
    public convenience init(server: HTTPServer, mode: HTTPTestMode = .inMemory) throws {
        try self.init(router: server.routes, configuration: server.configuration, mode: mode)
    }

    deinit { transport.shutDown() }

    /// `configuration`, when it lets the server speak HTTP/2 (an HTTP/2 mode's requirement).
    private static func checkedHTTP2(_ configuration: HTTPServer.Configuration) throws -> HTTPServer.Configuration {
        guard configuration.http2 != nil, configuration.tls == nil else {
            throw HTTPTestClientError.cannotStart("an HTTP/2 mode needs configuration.http2 (h2c: and no configuration.tls)")
        }
        return configuration
    }

    /// The driver of the in-memory loop; nil when live or on a group. A client made without a driver keeps
    /// its driver on a thread of its own (see the thread rule above): step it through the client (``step()``,
    /// ``advance(by:)``), and read it from the client's thread only.
    public var driver: LoopDriver? { (transport as? InMemoryTransport)?.driver ?? (transport as? HomedTransport)?.inMemory?.driver }

    // MARK: Sending

    /// Sends raw bytes: anything, split anywhere, for tests of bad input.
    ///
    /// - Parameter bytes: The bytes.
    /// - Throws: LoopKitNet's `NetError` when the connection has closed.
    public func send(_ bytes: Bytes) throws {
        try transport.send(Array(bytes))
    }

    /// Sends `text`'s UTF-8 bytes raw (`"GET / HTTP/1.1\r\nHost: t\r\n\r\n"`).
    ///
    /// - Parameter text: The bytes, as text.
    /// - Throws: LoopKitNet's `NetError` when the connection has closed.
    public func send(_ text: String) throws {
        try transport.send(Array(text.utf8))
    }

    /// Sends `request` (swift-http-types) as HTTP/1.1 with `body`: `Host: test` unless the request has an
    /// authority or a `Host` field, and `Content-Length` when there is a body and no framing field.
    ///
    /// - Parameters:
    ///   - request: The method, path and fields.
    ///   - body: The body.
    /// - Throws: LoopKitNet's `NetError` when the connection has closed.
    public func send(_ request: HTTPRequest, body: Bytes = []) throws {
        var head = "\(request.method.rawValue) \(request.path ?? "/") HTTP/1.1\r\n"
        let hostField = HTTPField.Name("Host")!
        if request.headerFields[hostField] == nil { head += "Host: \(request.authority ?? "test")\r\n" }
        for field in request.headerFields { head += "\(field.name.rawName): \(field.value)\r\n" }
        if !body.isEmpty, request.headerFields[.contentLength] == nil, request.headerFields[.transferEncoding] == nil {
            head += "Content-Length: \(body.count)\r\n"
        }
        try transport.send(Array((head + "\r\n").utf8) + Array(body))
    }

    // MARK: Receiving

    /// Reads the next whole response: in memory, steps the loop until it has arrived; live, waits for it.
    ///
    /// - Parameter isHeadRequest: The request was `HEAD` (the fields describe a body that is not sent).
    /// - Returns: The response, its chunked body put together.
    /// - Throws: ``HTTPTestClientError/noResponse(received:)`` (in memory, the loop went idle first),
    ///   ``HTTPTestClientError/closedEarly(received:)``, ``HTTPTestClientError/timedOut(after:received:)``
    ///   (live), ``HTTPTestClientError/malformed(_:)``.
    public func nextResponse(isHeadRequest: Bool = false) throws -> HTTPTestResponse {
        while true {
            // The end first, then the bytes: live, both come from another thread, and bytes taken before a
            // close that lands in between would be parsed as all there was.
            let closed = transport.isClosedByServer
            buffer += transport.takeReceived()
            if let (response, used) = try HTTPTestResponse.parse(buffer, isHeadRequest: isHeadRequest, atEndOfStream: closed) {
                buffer.removeFirst(used)
                return response
            }
            if closed { throw HTTPTestClientError.closedEarly(received: receivedText) }
            guard try transport.waitForProgress() else {
                throw mode.isInMemory ? HTTPTestClientError.noResponse(received: receivedText)
                                        : HTTPTestClientError.timedOut(after: LiveTransport.safetyTimeout, received: receivedText)
            }
        }
    }

    /// Sends `request` and reads its response.
    ///
    /// - Parameters:
    ///   - request: The request.
    ///   - body: Its body.
    /// - Returns: The response.
    /// - Throws: What ``send(_:body:)`` and ``nextResponse(isHeadRequest:)`` throw.
    public func execute(_ request: HTTPRequest, body: Bytes = []) throws -> HTTPTestResponse {
        try send(request, body: body)
        return try nextResponse(isHeadRequest: request.method == .head)
    }

    /// Sends a request for `path` and reads its response.
    ///
    /// ```swift
    /// let response = try client.execute(.post, "/echo", body: Bytes("ping"))
    /// ```
    ///
    /// - Parameters:
    ///   - method: The method (GET by default).
    ///   - path: The request target, with its query.
    ///   - headerFields: More fields.
    ///   - body: The body.
    /// - Returns: The response.
    /// - Throws: What ``nextResponse(isHeadRequest:)`` throws.
    public func execute(_ method: HTTPRequest.Method = .get, _ path: String, headerFields: HTTPFields = [:],
                        body: Bytes = []) throws -> HTTPTestResponse {
        try execute(HTTPRequest(method: method, scheme: nil, authority: nil, path: path, headerFields: headerFields), body: body)
    }

    /// Everything received and not yet read as a response, as text: a response as it is being written
    /// (a streamed body's chunks so far, say). Collects what has arrived; does not step or wait.
    public var receivedText: String {
        buffer += transport.takeReceived()
        return String(decoding: buffer, as: UTF8.self)
    }

    /// Forgets what has been received and not read (after looking at ``receivedText``).
    public func discardReceived() {
        buffer = transport.takeReceived()
        buffer.removeAll()
    }

    /// Reads until the server closes the connection (in memory, stepping the loop; live, waiting).
    ///
    /// - Returns: The bytes that came after the last response read and before the end.
    /// - Throws: ``HTTPTestClientError/noResponse(received:)`` (in memory) when the loop goes idle with the
    ///   connection still open; ``HTTPTestClientError/timedOut(after:received:)`` live.
    public func readUntilClosed() throws -> Bytes {
        while true {
            buffer += transport.takeReceived()
            if transport.isClosedByServer { break }
            guard try transport.waitForProgress() else {
                throw mode.isInMemory ? HTTPTestClientError.noResponse(received: receivedText)
                                        : HTTPTestClientError.timedOut(after: LiveTransport.safetyTimeout, received: receivedText)
            }
        }
        buffer += transport.takeReceived()
        defer { buffer = [] }
        return Bytes(buffer)
    }

    /// Takes the bytes received and not yet read (for ``WebSocketTestClient``, after the upgrade).
    func takeReceivedBytes() -> [UInt8] {
        buffer += transport.takeReceived()
        defer { buffer = [] }
        return buffer
    }

    /// Lets the server make progress once, as ``step()`` does; throws the client's error when it cannot.
    func waitForBytes() throws {
        guard try transport.waitForProgress() else {
            throw mode.isInMemory ? HTTPTestClientError.noResponse(received: receivedText)
                                    : HTTPTestClientError.timedOut(after: LiveTransport.safetyTimeout, received: receivedText)
        }
    }

    /// Whether the server has closed the connection (every byte it sent before has arrived).
    public var isClosedByServer: Bool { transport.isClosedByServer }

    // MARK: Time and steps

    /// In memory: runs one loop iteration if anything is queued or due; returns whether it did. Live:
    /// waits until something arrives or the server closes (false after the safety timeout).
    @discardableResult
    public func step() throws -> Bool {
        try transport.waitForProgress()
    }

    /// Lets the server finish the work it has queued: in memory, runs iterations until nothing is queued
    /// and no timer is due; live, waits until the server's loop has run two drains, by which time the
    /// work queued in the iteration that wrote the last response (a per-iteration metrics flush, say) has
    /// run.
    ///
    /// - Throws: `EventLoopError`: in memory, when the loop is still busy after the driver's guard on
    ///   iterations (work that re-queues itself forever); live, when the server's loop has shut down.
    public func runUntilIdle() throws {
        try transport.runUntilIdle()
    }

    /// Moves time forward by `duration`: in memory, virtual time, firing exactly the server's timers that
    /// fall due (its head, body and idle timeouts); live, real time passes.
    ///
    /// - Parameter duration: How far.
    public func advance(by duration: Duration) throws {
        try transport.advance(by: duration)
    }

    /// Closes the client's end of the connection (in memory, then runs the loop until idle).
    public func close() throws {
        try transport.closeClient()
    }

    /// Stops the server (gracefully in memory, live with ``HTTPServer/shutdown()``) and releases the loops.
    /// Calling it again does nothing; releasing the client does it too.
    public func shutDown() {
        transport.shutDown()
    }

    // MARK: From async code

    /// Runs `body` with the client on its thread, suspending the caller (on the caller's thread for a
    /// client on a test's driver).
    nonisolated(nonsending) func onClientThread<T>(_ body: @escaping (HTTPTestClient) throws -> T) async throws -> T {
        guard let home = (transport as? HomedTransport)?.home else { return try body(self) }
        let client = Unchecked(self)  // the caller is suspended while the client's thread uses it
        return try await home.perform { try body(client.value) }
    }

    /// Sends raw bytes, as ``send(_:)-([UInt8])``, without blocking a thread.
    nonisolated(nonsending) public func send(_ bytes: Bytes) async throws {
        try await onClientThread { try $0.send(bytes) }
    }

    /// Sends `text`'s UTF-8 bytes raw, as ``send(_:)-(String)``, without blocking a thread.
    nonisolated(nonsending) public func send(_ text: String) async throws {
        try await onClientThread { try $0.send(text) }
    }

    /// Sends `request` with `body`, as ``send(_:body:)``, without blocking a thread.
    nonisolated(nonsending) public func send(_ request: HTTPRequest, body: Bytes = []) async throws {
        try await onClientThread { try $0.send(request, body: body) }
    }

    /// Reads the next whole response, as ``nextResponse(isHeadRequest:)``, suspending until it has arrived.
    nonisolated(nonsending) public func nextResponse(isHeadRequest: Bool = false) async throws -> HTTPTestResponse {
        try await onClientThread { try $0.nextResponse(isHeadRequest: isHeadRequest) }
    }

    /// Sends `request` and reads its response, suspending until it has arrived.
    ///
    /// ```swift
    /// @Test func answers() async throws {
    ///     let client = try HTTPTestClient(router: router)
    ///     try await Task.sleep(for: .milliseconds(1))         // the test may now be on another thread
    ///     #expect(try await client.execute(.get, "/hello").status == .ok)
    /// }
    /// ```
    nonisolated(nonsending) public func execute(_ request: HTTPRequest, body: Bytes = []) async throws -> HTTPTestResponse {
        try await onClientThread { try $0.execute(request, body: body) }
    }

    /// Sends a request for `path` and reads its response, suspending until it has arrived.
    nonisolated(nonsending) public func execute(_ method: HTTPRequest.Method = .get, _ path: String, headerFields: HTTPFields = [:],
                                                body: Bytes = []) async throws -> HTTPTestResponse {
        try await onClientThread { try $0.execute(method, path, headerFields: headerFields, body: body) }
    }

    /// Reads until the server closes the connection, as ``readUntilClosed()``, suspending meanwhile.
    nonisolated(nonsending) public func readUntilClosed() async throws -> Bytes {
        try await onClientThread { try $0.readUntilClosed() }
    }

    /// Lets the server make progress once, as ``step()``.
    @discardableResult
    nonisolated(nonsending) public func step() async throws -> Bool {
        try await onClientThread { try $0.step() }
    }

    /// Lets the server finish the work it has queued, as ``runUntilIdle()``.
    nonisolated(nonsending) public func runUntilIdle() async throws {
        try await onClientThread { try $0.runUntilIdle() }
    }

    /// Moves time forward, as ``advance(by:)``.
    nonisolated(nonsending) public func advance(by duration: Duration) async throws {
        try await onClientThread { try $0.advance(by: duration) }
    }

    /// Closes the client's end of the connection, as ``close()``.
    nonisolated(nonsending) public func close() async throws {
        try await onClientThread { try $0.close() }
    }
}
