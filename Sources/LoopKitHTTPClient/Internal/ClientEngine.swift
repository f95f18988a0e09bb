import HTTPTypes
import LoopKit
import LoopKitNet

/// A transfer's identity: its easy handle (which later transfers reuse) and its serial number.
struct TransferID: Hashable, Sendable {
    let handle: UInt
    let serial: UInt64
}

/// The client's state on its loop: curl's multi handle, the watches and the timer curl asked for, the
/// transfers in flight. Every member but the two `let`s is touched on the loop's thread only (each entry
/// point checks), so sharing the reference between threads is safe.
final class ClientEngine: CurlMultiDelegate, RequestCanceller, @unchecked Sendable {  // loop-confined: all mutable state is used on `loop`'s thread, checked at every entry
    let loop: EventLoop
    let configuration: HTTPClient.Configuration

    private enum Lifecycle {
        /// No request yet: no multi handle, no shutdown observer.
        case idle
        case running(CurlMulti)
        /// Shut down (by the client or its loop): every request fails with this error.
        case closed(HTTPClientError)
    }

    private var lifecycle = Lifecycle.idle
    /// A class, so that pausing and resuming write a field: a struct's `watches[fd]?.isActive = …` went
    /// through the dictionary's `_modify` coroutine, whose frame was heap-allocated at every write (callgrind:
    /// 28,568 of the 588,913 allocations of 7,280 keep-alive requests, and 1.6k instructions a request).
    private final class WatchEntry {
        let watch: Watch
        let readable: Bool
        let writable: Bool
        /// False while paused: curl stopped watching the socket.
        var isActive: Bool
        /// A connection's socket (curl opened it through ``curlOpenedSocket(_:)``, and says when it closes
        /// it): paused when curl stops watching it. Any other (curl's resolver's) is let go then.
        let isConnection: Bool

        init(watch: Watch, readable: Bool, writable: Bool, isConnection: Bool) {
            self.watch = watch
            self.readable = readable
            self.writable = writable
            self.isConnection = isConnection
            isActive = true
        }
    }

    /// curl's sockets and what it asked them watched for.
    private var watches: [Int32: WatchEntry] = [:]
    /// The connections' sockets curl has open.
    private var connectionSockets: Set<Int32> = []
    private var timer: ScheduledTimer?
    /// Keyed by the transfer's easy handle (what curl_multi_info_read names).
    private var transfers: [UInt: Transfer] = [:]
    /// Handles of finished transfers, kept for the next requests (their options set once).
    private var idleEasies: [CurlEasy] = []
    /// The serial number of the last transfer started: a handle is reused, so a request's identity is
    /// its handle and this number together.
    private var nextSerial: UInt64 = 0
    /// Completions to call once curl has returned.
    private var pending: [() -> Void] = []
    private var insideCurl = 0

    init(loop: EventLoop, configuration: HTTPClient.Configuration) {
        self.loop = loop
        self.configuration = configuration
    }

    /// The number of requests in flight. Loop thread only.
    var transferCount: Int { transfers.count }

    /// The descriptors watched now, paused watches included (for tests). Loop thread only.
    var watchedDescriptors: [Int32] { Array(watches.keys) }

    // MARK: requests

    /// Starts `request`; `completion` gets the head or the failure, once, on the loop thread.
    func start(
        _ request: HTTPRequest, body: HTTPClientRequestBody?, deadline: ContinuousClock.Instant?, handle: HTTPClientRequestHandle,
        completion: @escaping (Result<HTTPClientResponse, HTTPClientError>) -> Void
    ) {
        precondition(loop.isCurrent, "LoopKitHTTPClient: a request started off its client's loop thread")
        var observation: RequestObservation?
        var completion = completion
        if let requestEnded = configuration.requestEnded {
            let made = RequestObservation(request, report: requestEnded)
            observation = made
            completion = made.reportingEarlyFailures(completion)
        }
        guard let multi = runningMulti(completion) else { return }
        guard let scheme = request.scheme, let authority = request.authority else {
            return completion(.failure(HTTPClientError(.invalidRequest, "the request has no scheme or authority: \(request)")))
        }
        guard let easy = idleEasies.popLast() ?? makeEasy() else {
            return completion(.failure(HTTPClientError(.transport, "curl_easy_init failed")))
        }
        let path = request.path ?? "/"
        guard easy.setURL("\(scheme)://\(authority)\(path)") else {
            return completion(.failure(HTTPClientError(.invalidRequest, "curl refuses the URL \(scheme)://\(authority)\(path)")))
        }
        var totalMilliseconds = configuration.requestTimeout.map(Self.milliseconds)
        if let deadline {
            let left = ContinuousClock.now.duration(to: deadline)
            guard left > .zero else { return completion(.failure(HTTPClientError(.deadlineExceeded, "the deadline passed before the request started"))) }
            totalMilliseconds = min(totalMilliseconds ?? .max, Self.milliseconds(left))
        }
        if let totalMilliseconds { easy.setTimeout(milliseconds: totalMilliseconds) }

        var lines: [String] = []
        for field in request.headerFields { lines.append("\(field.name.rawName): \(field.value)") }
        // No `Expect: 100-continue` round trip before a body (curl's default from 1 MiB) unless asked for.
        if body != nil && request.headerFields[.expect] == nil { lines.append("Expect:") }
        let method = request.method
        var bytesBody: Bytes?
        var pump: RequestBodyPump?
        nextSerial &+= 1
        let id = TransferID(handle: UInt(bitPattern: easy.handle), serial: nextSerial)
        if let body {
            easy.setBody(length: body.knownLength)
            if method != .post { easy.setCustomMethod(method.rawValue) }
            switch body.source {
            case .bytes(let bytes): bytesBody = bytes
            case .stream(_, let makeIterator):
                let made = RequestBodyPump(resumeConsumer: { [weak self] in self?.resumeFromAnyThread(id) })
                pump = made
                Task(executorPreference: loop) { await made.pump(makeIterator) }
            }
        } else if method == .get {
            // A reused handle is a GET already (CurlEasy.prepareForReuse).
        } else if method == .head {
            easy.setMethodHEAD()
        } else {
            easy.setCustomMethod(method.rawValue)
        }
        easy.setHeaderLines(lines)

        let stream = ResponseBodyStream(
            highWaterMark: configuration.bodyHighWaterMark, lowWaterMark: configuration.bodyLowWaterMark,
            onResume: { [weak self] in self?.resumeFromAnyThread(id) })
        let transfer = Transfer(
            id: id, easy: easy, stream: stream, pump: pump, bytesBody: bytesBody, handle: handle,
            followsRedirects: followsRedirects, limits: decodingLimits,
            later: { [unowned self] body in self.pending.append(body) },
            makeReader: { [weak self] stream in
                let engine = self
                return ResponseBodyReader(stream: stream) { [weak engine] in engine?.cancelFromAnyThread(id) }
            },
            pauseAfterCurl: { [unowned self] in self.pending.append { [weak self] in self?.pauseReceiving(id) } },
            completion: completion)
        transfer.observation = observation
        easy.attach(transfer)
        guard handle.started(id: id, engine: self) else {
            pump?.cancel()
            return completion(.failure(HTTPClientError(.cancelled, "the request was cancelled before it started")))
        }
        transfers[id.handle] = transfer
        insideCurl += 1
        let added = multi.add(easy)
        insideCurl -= 1
        if !added {
            transfers[id.handle] = nil
            pump?.cancel()
            return completion(.failure(HTTPClientError(.transport, "curl_multi_add_handle refused the request")))
        }
        afterCurl()
    }

    /// A new easy handle with the options of the client's configuration, which every request keeps.
    private func makeEasy() -> CurlEasy? {
        guard let easy = CurlEasy(), case .running(let multi) = lifecycle else { return nil }
        easy.setSocketHooks(multi.sockets)
        if configuration.requestEnded != nil { easy.countRequestsSent() }
        easy.setTimeouts(connectMilliseconds: Self.milliseconds(configuration.connectTimeout), totalMilliseconds: nil)
        easy.setMaximumConnectionAge(seconds: max(1, Int(configuration.idleTimeout.components.seconds)))
        switch configuration.redirects {
        case .disallow: easy.setRedirects(follow: false, maximum: 0)
        case .follow(let maximum): easy.setRedirects(follow: true, maximum: maximum)
        }
        if case .enabled = configuration.decompression { easy.setAcceptsEncodings() }
        switch configuration.httpVersion {
        case .automatic: easy.setHTTPVersion(CurlHTTPVersion.http2OverTLS)
        case .http1Only: easy.setHTTPVersion(CurlHTTPVersion.http1)
        case .http2PriorKnowledge: easy.setHTTPVersion(CurlHTTPVersion.http2PriorKnowledge)
        }
        let tls = configuration.tls
        easy.setTLS(caFile: tls.caFile, certificateFile: tls.certificateFile, privateKeyFile: tls.privateKeyFile,
                    verifies: !tls.unsafeSkipsCertificateVerification)
        if let proxy = configuration.proxy { easy.setProxy(proxy.url, tunnels: proxy.tunnelsPlainHTTP) } else { easy.setNoProxy() }
        easy.setNoProxyExceptions()
        return easy
    }

    private var followsRedirects: Bool {
        if case .follow = configuration.redirects { return true }
        return false
    }

    private var decodingLimits: (Int, Int)? {
        if case .enabled(let size, let ratio) = configuration.decompression { return (size, ratio) }
        return nil
    }

    /// Keeps the handle of a transfer that succeeded for the next request (what curl advises: a reused
    /// handle keeps its options, its receive buffer and its resolved state, where curl_easy_init and
    /// curl_easy_cleanup cost about 14,000 instructions a request). Up to ``maximumIdleEasies``; a handle
    /// whose transfer failed or was stopped is freed instead.
    private func recycle(_ easy: CurlEasy) {
        guard idleEasies.count < maximumIdleEasies else { return }
        easy.prepareForReuse()
        idleEasies.append(easy)
    }

    private var maximumIdleEasies: Int { max(1, min(configuration.maximumIdleConnections, 256)) }

    private func runningMulti(_ completion: (Result<HTTPClientResponse, HTTPClientError>) -> Void) -> CurlMulti? {
        switch lifecycle {
        case .running(let multi):
            return multi
        case .closed(let error):
            completion(.failure(error))
            return nil
        case .idle:
            guard let multi = CurlMulti(
                maximumConnectionsPerHost: configuration.maximumConnectionsPerHost,
                maximumCachedConnections: configuration.maximumIdleConnections, multiplexes: true)
            else {
                completion(.failure(HTTPClientError(.transport, "curl_multi_init failed (\(CurlGlobal.version))")))
                return nil
            }
            let observing = loop.addShutdownObserver(ObjectIdentifier(self)) { [weak self] in
                self?.close(HTTPClientError(.shutDown, "the client's loop shut down"))
            }
            guard observing else {
                lifecycle = .closed(HTTPClientError(.shutDown, "the client's loop is shut down"))
                completion(.failure(HTTPClientError(.shutDown, "the client's loop is shut down")))
                return nil
            }
            multi.attach(self)
            lifecycle = .running(multi)
            return multi
        }
    }

    private static func milliseconds(_ duration: Duration) -> Int {
        let (seconds, attoseconds) = duration.components
        return max(0, Int(seconds) * 1000 + Int(attoseconds / 1_000_000_000_000_000))
    }

    // MARK: ending transfers

    /// The transfer `id` while it is in flight.
    private func transfer(_ id: TransferID) -> Transfer? {
        guard let transfer = transfers[id.handle], transfer.id.serial == id.serial else { return nil }
        return transfer
    }

    /// Ends transfer `id` with `error` unless it already ended. Loop thread only, outside curl.
    func cancel(_ id: TransferID, with error: HTTPClientError) {
        precondition(loop.isCurrent)
        guard let transfer = transfer(id) else { return }
        transfer.abortReason = transfer.abortReason ?? error
        end(transfer, error: error)
        afterCurl()
    }

    private func cancelFromAnyThread(_ id: TransferID) {
        do {
            try loop.enqueue { [self] in cancel(id, with: HTTPClientError(.cancelled, "the response body was dropped unread")) }
        } catch {
            // Refused once the loop began to shut down: its shutdown observer ends every transfer.
        }
    }

    private func resumeFromAnyThread(_ id: TransferID) {
        do {
            try loop.enqueue { [self] in
                guard let transfer = transfer(id) else { return }
                insideCurl += 1
                let code = transfer.easy.resume()
                insideCurl -= 1
                // A limit tripped while curl handed over the bytes it kept: the transfer ends here (curl
                // may not report it done from inside curl_easy_pause).
                if transfers[id.handle] === transfer, transfer.abortReason != nil || code != CurlCode.ok {
                    end(transfer, error: transfer.abortReason ?? .curl(code, detail: transfer.easy.errorDetail))
                }
                afterCurl()
            }
        } catch {
            // Refused once the loop began to shut down: its shutdown observer ends every transfer.
        }
    }

    /// Ends `transfer`; its handle is kept for another request when `reusable` (curl reported it done, OK).
    /// Pauses receiving for transfer `id` (its body's buffer is at its high water mark) unless it ended
    /// meanwhile; its stream's reader resumes it. Loop thread only, outside curl.
    private func pauseReceiving(_ id: TransferID) {
        guard let transfer = transfer(id) else { return }
        insideCurl += 1
        transfer.easy.pauseReceiving()
        insideCurl -= 1
    }

    private func end(_ transfer: Transfer, error: HTTPClientError?, reusable: Bool = false) {
        transfer.observation?.ended(transfer, error: error)
        transfers[transfer.id.handle] = nil
        if case .running(let multi) = lifecycle {
            multi.remove(transfer.easy)
            if reusable && error == nil && transfer.abortReason == nil { recycle(transfer.easy) }
        }
        transfer.handle.ended()
        transfer.finish(error)
    }

    /// Shuts the client down: every transfer ends with `error`, the watches and timer go, the multi handle
    /// is freed; later requests fail with `error`. Loop thread only, outside curl. Twice does nothing.
    func close(_ error: HTTPClientError) {
        precondition(loop.isCurrent)
        guard case .running = lifecycle else {
            if case .idle = lifecycle { lifecycle = .closed(error) }
            return
        }
        for transfer in Array(transfers.values) {
            transfer.abortReason = transfer.abortReason ?? error
            end(transfer, error: error)
        }
        idleEasies.removeAll()
        for entry in watches.values { entry.watch.cancel() }
        watches.removeAll()
        timer?.cancel()
        timer = nil
        lifecycle = .closed(error)
        loop.removeShutdownObserver(ObjectIdentifier(self))
        runPending()
    }

    // MARK: curl's loop

    /// After curl returned: ends the transfers it finished, then calls the completions gathered meanwhile.
    private func afterCurl() {
        guard insideCurl == 0 else { return }
        if case .running(let multi) = lifecycle {
            for done in multi.completions() {
                guard let transfer = transfers[UInt(bitPattern: done.handle)] else { continue }
                var error: HTTPClientError?
                if done.code != CurlCode.ok {
                    if let reason = transfer.abortReason {
                        error = reason
                    } else if let failure = transfer.pump?.failure {
                        error = HTTPClientError(.requestBodyFailed, "the request body's sequence threw: \(failure)", curlCode: done.code)
                    } else {
                        error = .curl(done.code, detail: transfer.easy.errorDetail)
                    }
                }
                end(transfer, error: error, reusable: done.code == CurlCode.ok)
            }
        }
        runPending()
    }

    private func runPending() {
        while !pending.isEmpty {
            let batch = pending
            pending.removeAll()
            for body in batch { body() }
        }
    }

    func curlWatches(_ fd: Int32, readable: Bool, writable: Bool) {
        if let current = watches[fd] {
            let sameInterest = current.readable == readable && current.writable == writable
            if sameInterest && current.isActive { return }
            if !readable && !writable {
                // curl stops watching the socket: its connection goes idle in the cache (the next request
                // on it asks again) or is about to be closed (curl says so before closing it, so the event
                // is off the descriptor first). A connection's watch is paused and kept for its next
                // request, which saves a watch made and freed a keep-alive request; curlClosesSocket drops
                // it when curl closes the socket. Another socket (the resolver's) is not watched again.
                guard current.isConnection else {
                    current.watch.cancel()
                    watches[fd] = nil
                    return
                }
                if current.isActive {
                    current.watch.pause()
                    current.isActive = false
                }
                return
            }
            if sameInterest {
                do {
                    try current.watch.resume()
                    current.isActive = true
                    return
                } catch {
                    // libevent refused the descriptor again: a new watch is tried below.
                }
            }
            current.watch.cancel()
            watches[fd] = nil
        }
        guard readable || writable else { return }
        var events: IOEvents = []
        if readable { events.insert(.readable) }
        if writable { events.insert(.writable) }
        do {
            let watch = try loop.watch(fd, for: events) { [weak self] ready in
                guard let self, case .running(let multi) = self.lifecycle else { return }
                self.insideCurl += 1
                multi.socketReady(fd, readable: ready.contains(.readable), writable: ready.contains(.writable))
                self.insideCurl -= 1
                self.afterCurl()
            }
            watches[fd] = WatchEntry(watch: watch, readable: readable, writable: writable,
                                     isConnection: connectionSockets.contains(fd))
        } catch {
            // The loop is shutting down (its observer ends every transfer) or libevent refused the
            // descriptor: the transfer then ends at its deadline, which curl's timer keeps.
        }
    }

    func curlOpenedSocket(_ fd: Int32) {
        connectionSockets.insert(fd)
        // A watch left on this number would be a descriptor closed behind the client's back: not this socket's.
        if let stale = watches.removeValue(forKey: fd) { stale.watch.cancel() }
    }

    func curlClosesSocket(_ fd: Int32) {
        connectionSockets.remove(fd)
        if let entry = watches.removeValue(forKey: fd) { entry.watch.cancel() }
    }

    func curlWantsTimer(milliseconds: Int?) {
        timer?.cancel()
        timer = nil
        guard let milliseconds else { return }
        do {
            timer = try loop.schedule(after: .milliseconds(milliseconds)) { [weak self] in
                guard let self, case .running(let multi) = self.lifecycle else { return }
                self.timer = nil
                self.insideCurl += 1
                multi.timedOut()
                self.insideCurl -= 1
                self.afterCurl()
            }
        } catch {
            // Refused once the loop began to shut down: its shutdown observer ends every transfer.
        }
    }
}
