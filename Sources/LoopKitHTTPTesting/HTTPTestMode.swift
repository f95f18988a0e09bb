/// How an ``HTTPTestClient`` reaches the routes under test. One test body runs either way:
/// `@Test(arguments: HTTPTestMode.allCases)`.
public enum HTTPTestMode: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// The routes are served on a ``LoopKitTesting/LoopDriver``'s loop, over an in-memory connection pair,
    /// on virtual time: the test steps iterations and moves time, and the same test gives the same trace
    /// every run. No socket, no thread.
    case inMemory
    /// The routes are served by a real ``LoopKitHTTP/HTTPServer`` on 127.0.0.1 (port 0, one loop thread),
    /// reached through a real socket: what a client on the network sees.
    case live
    /// As ``inMemory``, deterministic on virtual time, but the client speaks HTTP/2 (h2c with prior
    /// knowledge, on nghttp2's client session): each request is a stream, and each stream's response is
    /// read back as the HTTP/1.1 modes read theirs (its body chunked when it has no `content-length`), so
    /// one test body runs over both protocols. Needs `configuration.http2` (the default). A WebSocket
    /// throws ``WebSocketTestClientError/notOverHTTP2``: the server does not offer WebSocket over HTTP/2
    /// (RFC 8441).
    case inMemoryHTTP2
    /// As ``live``, through a real socket, but in HTTP/2 (h2c with prior knowledge), as ``inMemoryHTTP2``.
    case liveHTTP2

    /// The HTTP/1.1 modes: ``inMemory`` and ``live``. The HTTP/2 modes are ``http2Cases``.
    public static let allCases: [HTTPTestMode] = [.inMemory, .live]

    /// The HTTP/2 modes: ``inMemoryHTTP2`` and ``liveHTTP2``.
    public static let http2Cases: [HTTPTestMode] = [.inMemoryHTTP2, .liveHTTP2]

    /// Every mode over both protocols: `@Test(arguments: HTTPTestMode.everyProtocol)` runs a test over
    /// HTTP/1.1 and HTTP/2, in memory and live.
    public static let everyProtocol: [HTTPTestMode] = allCases + http2Cases

    /// Whether the routes run on a stepped loop in memory (``inMemory``, ``inMemoryHTTP2``).
    public var isInMemory: Bool { self == .inMemory || self == .inMemoryHTTP2 }

    /// Whether the client speaks HTTP/2 (``inMemoryHTTP2``, ``liveHTTP2``).
    public var isHTTP2: Bool { self == .inMemoryHTTP2 || self == .liveHTTP2 }

    public var description: String { rawValue }
}
