import HTTPTypes
import Instrumentation
import LoopKit
import LoopKitNet
import ServiceContextModule

/// An HTTP client on a LoopKit loop: HTTP/1.1 and HTTP/2, TLS, a connection pool per host, redirects,
/// decoding, proxies — libcurl's multi-socket engine, its sockets watched and its timer kept by the loop; or,
/// with ``Configuration/Engine/automatic``, LoopKit's own HTTP/1.1 engine on LoopKitNet's connections for the
/// plain-http requests it supports (curl's for the rest).
///
/// ```swift
/// let client = HTTPClient(on: loop)
/// let response = try await client.execute(HTTPRequest(method: .get, scheme: "https", authority: "example.com", path: "/"))
/// let body = try await response.collect(upTo: 1 << 20)
/// ```
///
/// **Threads.** A client belongs to one loop: its connections, watches and timer live there. A handler or
/// task already on that loop calls ``execute(_:body:deadline:)`` with no hop; a task elsewhere hops onto the
/// loop once to start the request and is resumed on its own executor when the head arrives. Make one
/// client per loop (in a ``LoopGroup``, one per loop, picked with the handler's loop).
///
/// **Lifetime.** ``shutdown()`` ends every request with ``HTTPClientError/Kind/shutDown``; dropping the last
/// reference does the same, and so does the loop's shutdown. Every request ends exactly once whichever
/// comes first: success, failure, deadline, cancellation of the awaiting task, the client's end.
///
/// Safe from any thread.
public final class HTTPClient: Sendable {
    /// The loop the client's connections live on.
    public let loop: EventLoop
    /// The configuration the client was made with.
    public let configuration: Configuration
    let engine: ClientEngine
    /// The own HTTP/1.1 engine, with ``Configuration/Engine/automatic``.
    let ownEngine: OwnEngine?

    /// Makes a client on `loop`. Nothing connects until the first request.
    ///
    /// Safe from any thread.
    public init(on loop: EventLoop, configuration: Configuration = Configuration()) {
        self.loop = loop
        self.configuration = configuration
        engine = ClientEngine(loop: loop, configuration: configuration)
        ownEngine = configuration.engine == .automatic ? OwnEngine(loop: loop, configuration: configuration, curl: engine) : nil
    }

    deinit { shutdown() }

    /// Ends every request in flight with ``HTTPClientError/Kind/shutDown`` and closes the connections;
    /// later requests fail the same way. Calling it again does nothing.
    ///
    /// Safe from any thread; the client closes on its loop (in the loop's next iteration).
    public func shutdown() {
        let (engine, ownEngine) = (engine, ownEngine)
        do {
            try loop.enqueue {
                let error = HTTPClientError(.shutDown, "the client was shut down")
                ownEngine?.close(error)
                engine.close(error)
            }
        } catch {
            // Refused once the loop began to shut down: its shutdown observer closes the client.
        }
    }

    /// Sends `request` and returns once the response's head has arrived; its body follows as it arrives.
    ///
    /// `traceparent` and `tracestate` are added from the task's `ServiceContext` through the bootstrapped
    /// instrument (swift-distributed-tracing) when the request has none.
    ///
    /// - Parameters:
    ///   - request: The method, `scheme` (`http` or `https`), `authority`, `path` and fields.
    ///   - body: The request body, or nil.
    ///   - deadline: When the whole request (head and body) must be done; nil uses
    ///     ``Configuration/requestTimeout``.
    /// - Returns: The head, and the body as an `AsyncSequence`.
    /// - Throws: ``HTTPClientError``: ``HTTPClientError/Kind/cancelled`` when the awaiting task is cancelled.
    ///
    /// Safe from any task: on the client's loop it starts at once, elsewhere it hops onto the loop once.
    public func execute(
        _ request: HTTPRequest, body: HTTPClientRequestBody? = nil, deadline: ContinuousClock.Instant? = nil
    ) async throws(HTTPClientError) -> HTTPClientResponse {
        let request = Self.traced(request)
        let handle = HTTPClientRequestHandle()
        let (engine, ownEngine) = (engine, ownEngine)
        #if LOOPKIT_TSAN
        // Swift's runtime does not tell the thread sanitizer that a continuation resumed on the loop's thread
        // happens before the awaiting task goes on: say so, or what the loop made for the response (its
        // body's reader) is reported when the task reads it (as `WorkPool.run` does).
        let handOver = SanitizerKey()
        defer { handOver.acquired() }
        #endif
        do {
            return try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<HTTPClientResponse, any Error>) in
                    let start: @Sendable () -> Void = {
                        Self.start(request, body: body, deadline: deadline, handle: handle, engine: engine, ownEngine: ownEngine) { result in
                            #if LOOPKIT_TSAN
                            handOver.releasing()
                            #endif
                            continuation.resume(with: result)
                        }
                    }
                    if engine.loop.isCurrent {
                        start()
                    } else {
                        do {
                            try engine.loop.enqueue(start)
                        } catch {
                            continuation.resume(throwing: HTTPClientError(.shutDown, "the client's loop is shut down"))
                        }
                    }
                }
            } onCancel: {
                handle.cancel()
            }
        } catch let error as HTTPClientError {
            throw error
        } catch {
            throw HTTPClientError(.transport, "\(error)")
        }
    }

    /// Sends `request` and calls `completion` with the head, or the failure, once.
    ///
    /// - Parameters: as ``execute(_:body:deadline:)``, and `completion`, called on the loop's thread (before
    ///   this call returns when the request cannot start: the client shut down, a bad request).
    /// - Returns: A handle that cancels the request from any thread.
    ///
    /// Call on the client's loop thread (checked: the process stops otherwise).
    @discardableResult
    public func execute(
        _ request: HTTPRequest, body: HTTPClientRequestBody? = nil, deadline: ContinuousClock.Instant? = nil,
        completion: @escaping (Result<HTTPClientResponse, HTTPClientError>) -> Void
    ) -> HTTPClientRequestHandle {
        precondition(loop.isCurrent, "LoopKitHTTPClient: execute(_:body:deadline:completion:) called off its client's loop thread")
        let handle = HTTPClientRequestHandle()
        Self.start(Self.traced(request), body: body, deadline: deadline, handle: handle, engine: engine, ownEngine: ownEngine, completion: completion)
        return handle
    }

    /// Starts `request` on the own engine when it has one that supports the request, else on curl's.
    /// Loop thread.
    private static func start(
        _ request: HTTPRequest, body: HTTPClientRequestBody?, deadline: ContinuousClock.Instant?, handle: HTTPClientRequestHandle,
        engine: ClientEngine, ownEngine: OwnEngine?, completion: @escaping (Result<HTTPClientResponse, HTTPClientError>) -> Void
    ) {
        if let ownEngine, OwnEngine.supports(request, body: body, configuration: ownEngine.configuration) {
            ownEngine.start(request, body: body, deadline: deadline, handle: handle, completion: completion)
        } else {
            engine.start(request, body: body, deadline: deadline, handle: handle, completion: completion)
        }
    }

    /// `request` with the task's trace context injected, when there is one and the request carries none.
    private static func traced(_ request: HTTPRequest) -> HTTPRequest {
        guard let context = ServiceContext.current, request.headerFields[HTTPField.Name("traceparent")!] == nil else { return request }
        var request = request
        InstrumentationSystem.instrument.inject(context, into: &request.headerFields, using: FieldInjector())
        return request
    }

    private struct FieldInjector: Injector {
        func inject(_ value: String, forKey key: String, into fields: inout HTTPFields) {
            guard let name = HTTPField.Name(key) else { return }
            fields[name] = value
        }
    }
}
