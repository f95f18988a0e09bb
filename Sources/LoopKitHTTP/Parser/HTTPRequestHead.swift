import HTTPTypes

/// An HTTP protocol version: 1.0, 1.1, or 2.
public struct HTTPVersion: Sendable, Hashable, CustomStringConvertible {
    /// The major version: 1 or 2.
    public var major: Int
    /// The minor version: 0 or 1 (0 for HTTP/2).
    public var minor: Int

    /// HTTP/1.0.
    public static let http1_0 = HTTPVersion(major: 1, minor: 0)
    /// HTTP/1.1.
    public static let http1_1 = HTTPVersion(major: 1, minor: 1)
    /// HTTP/2 (a request on an HTTP/2 stream).
    public static let http2 = HTTPVersion(major: 2, minor: 0)

    /// `HTTP/major.minor`.
    public var description: String { "HTTP/\(major).\(minor)" }
}

/// How the body of a request is delimited (RFC 9112 §6.3).
public enum HTTPBodyFraming: Sendable, Hashable {
    /// No body.
    case none
    /// Exactly this many bytes (`Content-Length`).
    case length(Int)
    /// Chunked transfer coding.
    case chunked
}

/// A parsed request head: the `HTTPRequest` plus what HTTP/1.1 framing needs.
public struct HTTPRequestHead: Sendable, Hashable {
    /// The request, as parsed (built on first access) or built (``HTTPParsedHead``).
    var storage: HTTPParsedHead

    /// The request: method, path (the request target as sent), authority (the `Host` field) and fields.
    ///
    /// The `Host` field is moved into `authority`, as swift-http-types' HTTP/1 conversions do. The HTTP/1
    /// parser builds it on first access (once: later reads get the same value).
    public var request: HTTPRequest {
        get { storage.request }
        set { storage = HTTPParsedHead(built: newValue, replacing: storage) }
    }

    /// The method, read without building the request.
    var method: HTTPRequest.Method { storage.method }

    /// The request target (`:path`, "/" when it has none), read without building the request.
    var target: String { storage.target }
    /// The target without its query.
    var path: Substring { storage.path }
    /// The version the client spoke.
    public var version: HTTPVersion
    /// Whether the connection stays open after the response (HTTP/1.1 unless `Connection: close`;
    /// HTTP/1.0 only with `Connection: keep-alive`).
    public var keepAlive: Bool
    /// Whether the client sent `Expect: 100-continue` and waits for `100 Continue` before its body.
    public var expectsContinue: Bool
    /// How the body is delimited.
    public var framing: HTTPBodyFraming
    /// Whether the fields may hold `X-Request-ID` (false: the parser saw none, so the request id needs
    /// no lookup). Not part of the head's value: equal heads may differ in it.
    var mayCarryRequestID = true

    /// A head holding a built request.
    init(request: HTTPRequest, version: HTTPVersion, keepAlive: Bool, expectsContinue: Bool, framing: HTTPBodyFraming,
         mayCarryRequestID: Bool = true) {
        self.init(storage: HTTPParsedHead(built: request), version: version, keepAlive: keepAlive, expectsContinue: expectsContinue,
                  framing: framing, mayCarryRequestID: mayCarryRequestID)
    }

    init(storage: HTTPParsedHead, version: HTTPVersion, keepAlive: Bool, expectsContinue: Bool, framing: HTTPBodyFraming,
         mayCarryRequestID: Bool) {
        self.storage = storage
        self.version = version
        self.keepAlive = keepAlive
        self.expectsContinue = expectsContinue
        self.framing = framing
        self.mayCarryRequestID = mayCarryRequestID
    }

    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.request == rhs.request && lhs.version == rhs.version && lhs.keepAlive == rhs.keepAlive
            && lhs.expectsContinue == rhs.expectsContinue && lhs.framing == rhs.framing
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(request)
        hasher.combine(version)
        hasher.combine(keepAlive)
        hasher.combine(expectsContinue)
        hasher.combine(framing)
    }
}
