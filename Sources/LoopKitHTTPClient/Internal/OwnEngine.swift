import DequeModule
import HTTPTypes
import LoopKit
import LoopKitNet

/// One request of the own engine: what it sends, where, and whom it tells. Loop thread only.
final class Exchange {
    let id: TransferID
    var request: HTTPRequest
    /// `host:port` of ``host`` and ``port``: the pool's key.
    var key: String
    var host: String
    var port: Int
    var body: Bytes?
    let handle: HTTPClientRequestHandle
    let deadline: ContinuousClock.Instant?
    /// Told the head once, or the failure; nil after.
    var completion: ((Result<HTTPClientResponse, HTTPClientError>) -> Void)?
    /// What ``completion`` is told when the engine flushes.
    var outcome: Result<HTTPClientResponse, HTTPClientError>?
    /// The body's stream, made with the head; nil while a followed redirect's body is dropped.
    var stream: ResponseBodyStream?
    var timer: ScheduledTimer?
    var connection: HTTP1Connection?
    /// Sent again once already, on a new connection, after a reused one closed before a byte came back.
    var retried = false
    var redirectsLeft: Int
    /// The `Location` of a redirect being followed (set with the head, followed once its body is read).
    var redirect: (status: Int, location: String)?

    init(id: TransferID, request: HTTPRequest, key: String, host: String, port: Int, body: Bytes?, handle: HTTPClientRequestHandle,
         deadline: ContinuousClock.Instant?, redirectsLeft: Int, completion: @escaping (Result<HTTPClientResponse, HTTPClientError>) -> Void) {
        self.id = id
        self.request = request
        self.key = key
        self.host = host
        self.port = port
        self.body = body
        self.handle = handle
        self.deadline = deadline
        self.redirectsLeft = redirectsLeft
        self.completion = completion
    }
}

/// LoopKit's own HTTP/1.1 client engine: per host a pool of LoopKitNet connections on the loop
/// (``HTTP1Connection``, one request at a time each), up to ``HTTPClient/Configuration/maximumConnectionsPerHost``
/// open and the rest waiting in order; idle connections kept up to the idle timeout. A request sent on a
/// reused connection that closes before any byte of the response is sent once more on a new connection
/// when its method is idempotent. Every member is touched on the loop's thread only (each entry point
/// checks), so sharing the reference between threads is safe.
final class OwnEngine: RequestCanceller, @unchecked Sendable {  // loop-confined: all mutable state is used on `loop`'s thread, checked at every entry
    let loop: EventLoop
    let configuration: HTTPClient.Configuration
    /// curl's engine, for a redirect this one does not follow (to https, say).
    private let curl: ClientEngine

    private enum Lifecycle {
        /// No request yet: no shutdown observer.
        case idle
        case running
        /// Shut down (by the client or its loop): every request fails with this error.
        case closed(HTTPClientError)
    }

    /// One host's connections and the requests waiting for one.
    private final class HostPool {
        let host: String
        let port: Int
        var idle: [HTTP1Connection] = []
        /// Open connections, idle ones included.
        var open = 0
        var connecting = 0
        var waiting = Deque<Exchange>()

        init(host: String, port: Int) {
            self.host = host
            self.port = port
        }
    }

    private var lifecycle = Lifecycle.idle
    private var pools: [String: HostPool] = [:]
    /// The exchanges in flight by serial number (a handle's cancel, a deadline, a body's resume name one).
    private var exchanges: [UInt64: Exchange] = [:]
    private var nextSerial: UInt64 = 0
    /// Exchanges whose completion is called once the engine's current entry point is done with its state.
    private var ready = Deque<Exchange>()
    private var flushing = false
    private var idleCount = 0
    private var idleTimer: ScheduledTimer?
    private let idleTimeoutNanoseconds: UInt64

    init(loop: EventLoop, configuration: HTTPClient.Configuration, curl: ClientEngine) {
        self.loop = loop
        self.configuration = configuration
        self.curl = curl
        idleTimeoutNanoseconds = UInt64(max(0, configuration.idleTimeout / .nanoseconds(1)))
    }

    /// Whether the own engine sends `request` (``HTTPClient/Configuration/Engine/automatic``): plain http,
    /// HTTP/1.1, no proxy, no decoding, no ``HTTPClient/Configuration/requestEnded`` (the own engine does
    /// not summarize its requests yet), a body of bytes or none.
    static func supports(_ request: HTTPRequest, body: HTTPClientRequestBody?, configuration: HTTPClient.Configuration) -> Bool {
        guard configuration.engine == .automatic, request.scheme == "http", request.authority != nil,
            configuration.proxy == nil, configuration.httpVersion != .http2PriorKnowledge,
            configuration.decompression == .disabled, configuration.requestEnded == nil
        else { return false }
        if let body, case .stream = body.source { return false }
        switch request.method {
        case .get, .head, .post, .put, .delete, .options, .patch: return true
        default: return false
        }
    }

    // MARK: requests

    /// Starts `request`; `completion` gets the head or the failure, once, on the loop thread.
    func start(
        _ request: HTTPRequest, body: HTTPClientRequestBody?, deadline: ContinuousClock.Instant?, handle: HTTPClientRequestHandle,
        completion: @escaping (Result<HTTPClientResponse, HTTPClientError>) -> Void
    ) {
        precondition(loop.isCurrent, "LoopKitHTTPClient: a request started off its client's loop thread")
        guard running(completion) else { return }
        guard let (host, port) = Self.hostAndPort(request.authority ?? "") else {
            return completion(.failure(HTTPClientError(.invalidRequest, "the request's authority is not host[:port]: \(request.authority ?? "")")))
        }
        var bytes: Bytes?
        if let body, case .bytes(let given) = body.source { bytes = given }
        var redirects = 0
        if case .follow(let maximum) = configuration.redirects { redirects = maximum }
        let effectiveDeadline = self.deadline(deadline)
        if let effectiveDeadline, ContinuousClock.now >= effectiveDeadline {
            return completion(.failure(HTTPClientError(.deadlineExceeded, "the deadline passed before the request started")))
        }
        nextSerial &+= 1
        let id = TransferID(handle: 0, serial: nextSerial)
        let exchange = Exchange(
            id: id, request: request, key: "\(host):\(port)", host: host, port: port, body: bytes, handle: handle,
            deadline: effectiveDeadline, redirectsLeft: redirects, completion: completion)
        guard handle.started(id: id, engine: self) else {
            return completion(.failure(HTTPClientError(.cancelled, "the request was cancelled before it started")))
        }
        exchanges[id.serial] = exchange
        if let effectiveDeadline { armDeadline(exchange, effectiveDeadline) }
        enqueue(exchange)
        flush()
    }

    /// The earlier of `deadline` and the configured request timeout from now.
    private func deadline(_ deadline: ContinuousClock.Instant?) -> ContinuousClock.Instant? {
        guard let timeout = configuration.requestTimeout else { return deadline }
        let fromTimeout = ContinuousClock.now + timeout
        guard let deadline else { return fromTimeout }
        return min(deadline, fromTimeout)
    }

    private func armDeadline(_ exchange: Exchange, _ deadline: ContinuousClock.Instant) {
        let serial = exchange.id.serial
        do {
            exchange.timer = try loop.schedule(after: ContinuousClock.now.duration(to: deadline)) { [weak self] in
                guard let self, let exchange = self.exchanges[serial] else { return }
                exchange.timer = nil
                self.stop(exchange, HTTPClientError(.deadlineExceeded, "the request passed its deadline"))
                self.flush()
            }
        } catch {
            // Refused once the loop began to shut down: its shutdown observer ends every request.
        }
    }

    private func running(_ completion: (Result<HTTPClientResponse, HTTPClientError>) -> Void) -> Bool {
        switch lifecycle {
        case .running:
            return true
        case .closed(let error):
            completion(.failure(error))
            return false
        case .idle:
            let observing = loop.addShutdownObserver(ObjectIdentifier(self)) { [weak self] in
                self?.close(HTTPClientError(.shutDown, "the client's loop shut down"))
            }
            guard observing else {
                let error = HTTPClientError(.shutDown, "the client's loop is shut down")
                lifecycle = .closed(error)
                completion(.failure(error))
                return false
            }
            lifecycle = .running
            return true
        }
    }

    /// `host[:port]`, `[v6][:port]`; port 80 when none is given.
    static func hostAndPort(_ authority: String) -> (String, Int)? {
        guard !authority.isEmpty else { return nil }
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { return nil }
            let host = String(authority[authority.index(after: authority.startIndex)..<close])
            let rest = authority[authority.index(after: close)...]
            if rest.isEmpty { return (host, 80) }
            guard rest.hasPrefix(":"), let port = Int(rest.dropFirst()), (1...65_535).contains(port) else { return nil }
            return (host, port)
        }
        guard let colon = authority.lastIndex(of: ":") else { return (authority, 80) }
        guard let port = Int(authority[authority.index(after: colon)...]), (1...65_535).contains(port) else { return nil }
        let host = String(authority[..<colon])
        guard !host.isEmpty, !host.contains(":") else { return nil }
        return (host, port)
    }

    // MARK: the pools

    /// Queues `exchange` on its host's pool and sends what can be sent.
    private func enqueue(_ exchange: Exchange, first: Bool = false) {
        let pool = pools[exchange.key] ?? makePool(exchange)
        if first { pool.waiting.prepend(exchange) } else { pool.waiting.append(exchange) }
        dispatch(pool)
    }

    private func makePool(_ exchange: Exchange) -> HostPool {
        let pool = HostPool(host: exchange.host, port: exchange.port)
        pools[exchange.key] = pool
        return pool
    }

    /// Sends waiting requests on idle connections, and opens connections for the rest up to the limit.
    private func dispatch(_ pool: HostPool) {
        while !pool.waiting.isEmpty, let connection = pool.idle.popLast() {
            idleCount -= 1
            let exchange = pool.waiting.removeFirst()
            send(exchange, on: connection, pool)
        }
        while pool.connecting < pool.waiting.count, pool.open + pool.connecting < max(1, configuration.maximumConnectionsPerHost) {
            connect(pool)
        }
    }

    private func send(_ exchange: Exchange, on connection: HTTP1Connection, _ pool: HostPool) {
        exchange.connection = connection
        do {
            try connection.send(exchange)
        } catch {
            // The connection is closing (its close is on its way to connectionGone): the request waits
            // for another, at the head of the line.
            exchange.connection = nil
            connection.isGone = true
            pool.open -= 1
            pool.waiting.prepend(exchange)
            connection.connection.abort()
            dispatch(pool)
        }
    }

    private func connect(_ pool: HostPool) {
        pool.connecting += 1
        let key = "\(pool.host):\(pool.port)"
        let (host, port, loop) = (pool.host, pool.port, loop)
        var options = ConnectionOptions()
        options.noDelay = true
        let timeout = configuration.connectTimeout
        Task(executorPreference: loop) { [weak self] in
            let result: Result<Connection, NetError>
            do throws(NetError) {
                result = .success(try await Connection.connect(host: host, port: port, on: loop, options: options, timeout: timeout))
            } catch {
                result = .failure(error)
            }
            let engine = self
            let finish: @Sendable () -> Void = {
                guard let self = engine else {
                    if case .success(let connection) = result { connection.abort() }
                    return
                }
                self.connected(key, result)
            }
            if loop.isCurrent {
                finish()
            } else {
                do {
                    try loop.enqueue(finish)
                } catch {
                    // The loop is shutting down: its shutdown observer ends every request.
                }
            }
        }
    }

    private func connected(_ key: String, _ result: Result<Connection, NetError>) {
        guard let pool = pools[key] else {
            if case .success(let connection) = result { connection.abort() }
            return
        }
        pool.connecting -= 1
        switch result {
        case .success(let connection):
            guard case .running = lifecycle else {
                connection.abort()
                return
            }
            pool.open += 1
            let http1 = HTTP1Connection(connection: connection, key: key, engine: self)
            connection.setHandler(http1)
            if let exchange = pool.waiting.popFirst() {
                send(exchange, on: http1, pool)
            } else {
                becomeIdle(http1, pool)
            }
        case .failure(let error):
            if let exchange = pool.waiting.popFirst() {
                stop(exchange, Self.connectError(error, pool))
            }
        }
        dispatch(pool)
        flush()
    }

    private static func connectError(_ error: NetError, _ pool: HostPool) -> HTTPClientError {
        switch error {
        case .connectTimedOut: HTTPClientError(.deadlineExceeded, "the connect to \(pool.host):\(pool.port) timed out")
        case .loopShutDown: HTTPClientError(.shutDown, "the client's loop shut down")
        default: HTTPClientError(.connectFailed, "could not connect to \(pool.host):\(pool.port): \(error)")
        }
    }

    private func becomeIdle(_ connection: HTTP1Connection, _ pool: HostPool) {
        guard idleCount < max(1, configuration.maximumIdleConnections) else {
            connection.isGone = true
            pool.open -= 1
            connection.connection.close()
            return
        }
        connection.idleSince = loop.clockNanoseconds
        pool.idle.append(connection)
        idleCount += 1
        if idleTimer == nil { armIdleTimer(after: idleTimeoutNanoseconds) }
    }

    private func armIdleTimer(after nanoseconds: UInt64) {
        do {
            idleTimer = try loop.schedule(after: .nanoseconds(Int64(min(nanoseconds, UInt64(Int64.max))))) { [weak self] in
                self?.closeExpiredIdleConnections()
            }
        } catch {
            // Refused once the loop began to shut down: its shutdown observer closes the connections.
        }
    }

    /// Closes the connections idle for the idle timeout; the timer runs again for the next to expire.
    private func closeExpiredIdleConnections() {
        idleTimer = nil
        let now = loop.clockNanoseconds
        var next: UInt64?
        var expired: [HTTP1Connection] = []
        for pool in pools.values {
            var kept: [HTTP1Connection] = []
            for connection in pool.idle {
                let expires = connection.idleSince &+ idleTimeoutNanoseconds
                if expires <= now {
                    connection.isGone = true
                    pool.open -= 1
                    idleCount -= 1
                    expired.append(connection)
                } else {
                    kept.append(connection)
                    next = min(next ?? .max, expires - now)
                }
            }
            pool.idle = kept
        }
        for connection in expired { connection.connection.close() }  // out of the pools first: they are gone
        if let next { armIdleTimer(after: next) }
    }

    // MARK: from the connections

    /// The final head of `exchange`'s response arrived: told to its completion (at the next flush), or
    /// noted as a redirect to follow once its body is read.
    func headArrived(_ exchange: Exchange, status: HTTPResponse.Status, fields: HTTPFields, version: Int) {
        if case .follow = configuration.redirects, [301, 302, 303, 307, 308].contains(status.code), let location = fields[.location] {
            exchange.redirect = (status.code, location)
            return
        }
        let serial = exchange.id.serial
        let stream = ResponseBodyStream(
            highWaterMark: configuration.bodyHighWaterMark, lowWaterMark: configuration.bodyLowWaterMark,
            onResume: { [weak self] in self?.resumeFromAnyThread(serial) })
        exchange.stream = stream
        var head = HTTPResponse(status: status)
        head.headerFields = fields
        let reader = ResponseBodyReader(stream: stream) { [weak self] in self?.cancelFromAnyThread(serial) }
        exchange.outcome = .success(HTTPClientResponse(head: head, httpVersion: version, body: .init(reader: reader)))
        ready.append(exchange)
    }

    /// `exchange`'s response ended on `connection`, which goes back to its pool when `reusable`.
    func responseEnded(_ exchange: Exchange, on connection: HTTP1Connection, reusable: Bool) {
        exchange.connection = nil
        if let pool = pools[connection.key] {
            if reusable {
                if let next = pool.waiting.popFirst() {
                    send(next, on: connection, pool)
                } else {
                    becomeIdle(connection, pool)
                }
            } else if !connection.isGone {
                connection.isGone = true
                pool.open -= 1
            }
        }
        if let redirect = exchange.redirect {
            exchange.redirect = nil
            follow(exchange, status: redirect.status, location: redirect.location)
        } else {
            end(exchange, nil)
        }
        if let pool = pools[connection.key] { dispatch(pool) }
    }

    /// `exchange`'s connection closed with `reason` before its response ended.
    func connectionLost(_ exchange: Exchange, on connection: HTTP1Connection, reason: CloseReason, receivedResponseByte: Bool) {
        exchange.connection = nil
        if connection.isReused, !receivedResponseByte, !exchange.retried, exchange.stream == nil, Self.isIdempotent(exchange.request.method) {
            exchange.retried = true
            connectionGone(connection)
            enqueue(exchange, first: true)
            return
        }
        stop(exchange, HTTPClientError(.transport, "the connection closed before the response ended (\(reason))"))
    }

    /// The connection closed: it leaves its pool.
    func connectionGone(_ connection: HTTP1Connection) {
        guard let pool = pools[connection.key] else { return }
        if let index = pool.idle.firstIndex(where: { $0 === connection }) {
            pool.idle.remove(at: index)
            idleCount -= 1
        }
        if !connection.isGone {
            connection.isGone = true
            pool.open -= 1
        }
        dispatch(pool)
    }

    /// Fails `exchange` with `error` (its connection, whose response is unread, is the caller's).
    func fail(_ exchange: Exchange, _ error: HTTPClientError) {
        exchange.connection = nil
        end(exchange, error)
    }

    private static func isIdempotent(_ method: HTTPRequest.Method) -> Bool {
        switch method {
        case .get, .head, .put, .delete, .options, .trace: true
        default: false
        }
    }

    // MARK: redirects

    /// Sends the request again to `location` (RFC 9110 §15.4; as curl: 301, 302 and 303 turn a POST
    /// into a GET without its body, 303 any method but HEAD); credentials stay with the first host.
    private func follow(_ exchange: Exchange, status: Int, location: String) {
        guard exchange.redirectsLeft > 0 else {
            return end(exchange, HTTPClientError(.tooManyRedirects, "more redirects than the client follows"))
        }
        guard var next = Self.resolve(location, against: exchange.request) else {
            return end(exchange, HTTPClientError(.transport, "a redirect to a location the client cannot follow: \(location)"))
        }
        exchange.redirectsLeft -= 1
        if (status == 303 && next.method != .head) || ((status == 301 || status == 302) && next.method == .post) {
            next.method = .get
            exchange.body = nil
            next.headerFields[.contentLength] = nil
            next.headerFields[.contentType] = nil
        }
        if next.authority != exchange.request.authority || next.scheme != exchange.request.scheme {
            next.headerFields[.authorization] = nil
            next.headerFields[.cookie] = nil
        }
        let body = exchange.body.map { HTTPClientRequestBody.bytes($0) }
        if Self.supports(next, body: body, configuration: configuration), let (host, port) = Self.hostAndPort(next.authority ?? "") {
            exchange.request = next
            exchange.host = host
            exchange.port = port
            exchange.key = "\(host):\(port)"
            exchange.retried = false
            enqueue(exchange)
            return
        }
        // Not the own engine's (https, say): curl goes on from here.
        exchanges[exchange.id.serial] = nil
        exchange.timer?.cancel()
        exchange.timer = nil
        guard let completion = exchange.completion else { return }
        exchange.completion = nil
        guard exchange.handle.handedOver() else {
            return completion(.failure(HTTPClientError(.cancelled, "the request was cancelled")))
        }
        curl.start(next, body: body, deadline: exchange.deadline, handle: exchange.handle, completion: completion)
    }

    /// `location` (absolute, scheme-relative, absolute-path or relative) against `request`'s URL.
    static func resolve(_ location: String, against request: HTTPRequest) -> HTTPRequest? {
        var next = request
        if let colon = location.firstIndex(of: ":"), location[colon...].hasPrefix("://"), !location[..<colon].contains("/") {
            next.scheme = location[..<colon].lowercased()
            let rest = location[location.index(colon, offsetBy: 3)...]
            let pathStart = rest.firstIndex(where: { $0 == "/" || $0 == "?" }) ?? rest.endIndex
            next.authority = String(rest[..<pathStart])
            next.path = pathStart == rest.endIndex ? "/" : (rest[pathStart] == "?" ? "/" : "") + String(rest[pathStart...])
        } else if location.hasPrefix("//") {
            let rest = location.dropFirst(2)
            let pathStart = rest.firstIndex(of: "/") ?? rest.endIndex
            next.authority = String(rest[..<pathStart])
            next.path = pathStart == rest.endIndex ? "/" : String(rest[pathStart...])
        } else if location.hasPrefix("/") {
            next.path = location
        } else if !location.isEmpty {
            let current = request.path ?? "/"
            let withoutQuery = current.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first ?? "/"
            let directory = withoutQuery.lastIndex(of: "/").map { withoutQuery[...$0] } ?? "/"
            next.path = String(directory) + location
        } else {
            return nil
        }
        guard next.authority?.isEmpty == false else { return nil }
        return next
    }

    // MARK: ending requests

    /// Ends `exchange` with `error` (nil: its body is complete) unless it ended already; the completion
    /// is told at the next flush.
    private func end(_ exchange: Exchange, _ error: HTTPClientError?) {
        guard exchanges.removeValue(forKey: exchange.id.serial) != nil else { return }
        exchange.timer?.cancel()
        exchange.timer = nil
        exchange.handle.ended()
        if let error {
            if exchange.completion != nil && exchange.outcome == nil {
                exchange.outcome = .failure(error)
                ready.append(exchange)
            } else if case .success? = exchange.outcome {
                exchange.outcome = .failure(error)  // the head was not told yet: the failure is, instead
            }
        } else if exchange.completion != nil && exchange.outcome == nil {
            exchange.outcome = .failure(HTTPClientError(.transport, "the response ended without a head"))
            ready.append(exchange)
        }
        exchange.stream?.finish(error)
    }

    /// Ends `exchange` with `error` wherever it is: waiting (it leaves the line) or on a connection (which
    /// is aborted: the rest of its response is unread).
    private func stop(_ exchange: Exchange, _ error: HTTPClientError) {
        guard exchanges[exchange.id.serial] != nil else { return }
        if let connection = exchange.connection {
            exchange.connection = nil
            end(exchange, error)
            connection.abortExchange()
        } else {
            if let pool = pools[exchange.key], let index = pool.waiting.firstIndex(where: { $0 === exchange }) {
                pool.waiting.remove(at: index)
            }
            end(exchange, error)
        }
    }

    /// Calls the completions of the exchanges whose head (or failure) is in. Loop thread; every entry point
    /// calls it last, once its state is settled (a completion may start the next request).
    func flush() {
        guard !flushing else { return }
        flushing = true
        while let exchange = ready.popFirst() {
            guard let completion = exchange.completion, let outcome = exchange.outcome else { continue }
            exchange.completion = nil
            exchange.outcome = nil
            completion(outcome)
        }
        flushing = false
    }

    /// Ends request `id` with `error` unless it already ended. Loop thread only.
    func cancel(_ id: TransferID, with error: HTTPClientError) {
        precondition(loop.isCurrent)
        guard let exchange = exchanges[id.serial] else { return }
        stop(exchange, error)
        flush()
    }

    private func cancelFromAnyThread(_ serial: UInt64) {
        do {
            try loop.enqueue { [self] in cancel(TransferID(handle: 0, serial: serial), with: HTTPClientError(.cancelled, "the response body was dropped unread")) }
        } catch {
            // Refused once the loop began to shut down: its shutdown observer ends every request.
        }
    }

    private func resumeFromAnyThread(_ serial: UInt64) {
        do {
            try loop.enqueue { [self] in
                guard let exchange = exchanges[serial], let connection = exchange.connection else { return }
                connection.resumeForBody()
                flush()
            }
        } catch {
            // Refused once the loop began to shut down: its shutdown observer ends every request.
        }
    }

    /// Shuts the engine down: every request ends with `error`, the connections close; later requests fail
    /// with `error`. Loop thread only. Twice does nothing.
    func close(_ error: HTTPClientError) {
        precondition(loop.isCurrent)
        guard case .running = lifecycle else {
            if case .idle = lifecycle { lifecycle = .closed(error) }
            return
        }
        lifecycle = .closed(error)
        for exchange in Array(exchanges.values) { stop(exchange, error) }
        let idle = pools.values.flatMap(\.idle)
        pools.removeAll()
        for connection in idle {
            connection.isGone = true
            connection.connection.close()
        }
        idleCount = 0
        idleTimer?.cancel()
        idleTimer = nil
        loop.removeShutdownObserver(ObjectIdentifier(self))
        flush()
    }
}
