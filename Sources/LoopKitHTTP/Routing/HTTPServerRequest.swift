import HTTPTypes
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Logging
import LoopKit
import LoopKitNet
import Tracing

/// A request as a handler sees it: the head, the collected body, the path parameters and the loop, and
/// its context: an id, a logger that names it, its trace context and when it started.
///
/// A value: safe to pass to any thread; the handler that gets it runs on ``loop``'s thread.
public struct HTTPServerRequest: Sendable {
    /// The request head: method, path, authority and fields.
    ///
    /// Over HTTP/1.1 it is built from the parsed bytes on first access (a handler that reads only
    /// ``path``, ``query(_:)`` or its parameters never builds it); every read gets the same value.
    public var head: HTTPRequest {
        get { headStorage.request }
        set { headStorage = HTTPParsedHead(built: newValue, replacing: headStorage) }
    }
    /// The head, built or still as parsed, and the request's id, start and route: one reference.
    private var headStorage: HTTPParsedHead
    /// The request target (`:path`), read without building the head.
    private var target: String { headStorage.target }
    /// The method, read without building the head.
    var method: HTTPRequest.Method { headStorage.method }
    /// Whether the head has a field of one of `names`, read without building the head (when it is not).
    func hasField(namedAnyOf names: HTTPFieldNames) -> Bool { headStorage.hasField(namedAnyOf: names) }
    /// The version the client spoke.
    public var version: HTTPVersion
    /// The body, collected up to the server's ``HTTPServer/Configuration/maxBodySize``.
    public var body: Bytes
    /// Values of the route's `:name` segments.
    public var parameters: HTTPPathParameters
    /// The loop the connection lives on: the handler runs on its thread.
    public var loop: EventLoop { server.loop }
    /// The request's id: the client's ``HTTPServer/Configuration/requestIDField`` (`X-Request-ID`) when
    /// it is 1 to 128 characters of visible ASCII, else one the server made (unique in the process; the
    /// in-memory test client's host makes `memory-1`, `memory-2`…, the same in every run). The response
    /// carries it in the same field.
    public var id: String { headStorage.id }
    /// When the request's head arrived (for durations: `ContinuousClock.now - request.startTime`).
    public var startTime: ContinuousClock.Instant { headStorage.startTime }
    /// The pattern of the route that matched (`/users/:id`), nil when none did (404, 405, `OPTIONS`).
    public var route: String? { headStorage.route }
    /// The request's trace context: extracted from its `traceparent` and `tracestate` by the installed
    /// instrument (a malformed `traceparent` is ignored), and holding the request's server span when a
    /// tracer is bootstrapped; `.topLevel` when none is. Start child spans with it:
    /// `InstrumentationSystem.tracer.withSpan("query", context: request.serviceContext) { … }`.
    public var serviceContext: ServiceContext {
        get { changes?.serviceContext ?? .topLevel }
        set { changes = Changes(serviceContext: newValue, logger: changes?.logger) }
    }
    /// The server's logger with `request.id` in its metadata. Set it (a middleware adding metadata) and
    /// the handler gets the new one.
    public var logger: Logger {
        get {
            if let logger = changes?.logger { return logger }
            var logger = server.logger
            logger[metadataKey: "request.id"] = .string(id)
            return logger
        }
        set { changes = Changes(serviceContext: changes?.serviceContext, logger: newValue) }
    }
    /// The trace context (when tracing is on) and a logger set by middleware: rarely there, so kept
    /// behind one reference (nil: neither), which a request without them copies and destroys as one
    /// word. Immutable: a change makes a new one, so copies of the request stay apart.
    private var changes: Changes?
    private final class Changes: Sendable {
        let serviceContext: ServiceContext?
        let logger: Logger?

        init(serviceContext: ServiceContext?, logger: Logger?) {
            self.serviceContext = serviceContext
            self.logger = logger
        }
    }
    /// The server's presence on the loop, for its logger: one reference, not a logger copied per request
    /// (``logger`` adds the id when asked).
    private let server: HTTPLoopContext


    /// The path without the query: the part of the request target before `?`.
    public var path: Substring { headStorage.path }

    /// `target` up to its first `?`: searched with `memchr` on the string's UTF-8 bytes (a generic search
    /// over `String.UTF8View` costs a few hundred instructions a request).
    static func withoutQuery(_ target: String) -> Substring {
        var target = target
        let mark = target.withUTF8 { bytes -> Int? in
            guard let base = bytes.baseAddress, let found = memchr(base, Int32(UInt8(ascii: "?")), bytes.count) else { return nil }
            return base.distance(to: found.assumingMemoryBound(to: UInt8.self))
        }
        guard let mark else { return target[...] }
        return target[..<target.utf8.index(target.utf8.startIndex, offsetBy: mark)]
    }

    /// The value of query parameter `name` (the first one), not percent-decoded.
    ///
    /// - Parameter name: The parameter's name.
    /// - Returns: Its value, or nil when the query has no such parameter.
    public func query(_ name: String) -> Substring? {
        let target = target
        guard let mark = target.utf8.firstIndex(of: UInt8(ascii: "?")) else { return nil }
        for pair in target[target.index(after: mark)...].split(separator: "&") {
            if let equals = pair.firstIndex(of: "=") {
                if pair[..<equals] == name { return pair[pair.index(after: equals)...] }
            } else if pair == name {
                return ""
            }
        }
        return nil
    }
}

/// The values of a route's `:name` path segments.
public struct HTTPPathParameters: Sendable, Hashable {
    var pairs: [(name: String, value: Substring)] = []

    /// The value of parameter `name`, or nil.
    public subscript(name: String) -> Substring? {
        pairs.first { $0.name == name }?.value
    }

    /// Whether there are none.
    public var isEmpty: Bool { pairs.isEmpty }

    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.pairs.elementsEqual(rhs.pairs) { $0.name == $1.name && $0.value == $1.value }
    }

    public func hash(into hasher: inout Hasher) {
        for pair in pairs {
            hasher.combine(pair.name)
            hasher.combine(pair.value)
        }
    }
}

// The initializers live in an extension so that the struct keeps its memberwise initializer: a request made
// by it is one value, where an initializer that assigns `self`'s properties one by one left the optimizer a
// copy of the whole request, and the copy's destruction, on every request (about 300 instructions).
extension HTTPServerRequest {
    /// The request of `exchange`, with `body` and the route's `parameters`.
    @inline(__always)
    static func of(_ exchange: HTTPExchange, body: Bytes, parameters: HTTPPathParameters, server: HTTPLoopContext) -> HTTPServerRequest {
        HTTPServerRequest(headStorage: exchange.head.storage, version: exchange.head.version, body: body, parameters: parameters,
                          changes: exchange.extras?.serviceContext.map { Changes(serviceContext: $0, logger: nil) },
                          server: server)
    }

    /// A request of a built head, with no exchange behind it (for the fuzzers and tests): id `id`, started
    /// now, routed by no route.
    init(head: HTTPRequest, version: HTTPVersion, body: Bytes, parameters: HTTPPathParameters, id: String, server: HTTPLoopContext) {
        headStorage = HTTPParsedHead(built: head)
        headStorage.identify(id: id, startTime: .now)
        self.version = version
        self.body = body
        self.parameters = parameters
        self.server = server
    }
}
