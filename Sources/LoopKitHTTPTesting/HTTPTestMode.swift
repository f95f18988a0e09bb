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

    public var description: String { rawValue }
}
