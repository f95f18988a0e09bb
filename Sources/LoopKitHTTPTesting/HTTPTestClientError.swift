import HTTPTypes
/// Why an ``HTTPTestClient`` could not give what was asked.
public enum HTTPTestClientError: Error, Sendable, Hashable, CustomStringConvertible {
    /// In memory: no response is complete and the loop has nothing left to do (no queued work, no due
    /// timer): the server waits for more input or for time to pass. `received` is what arrived so far.
    case noResponse(received: String)
    /// The server closed the connection before a whole response arrived; `received` is what did.
    case closedEarly(received: String)
    /// Live: nothing completed within the client's safety timeout.
    case timedOut(after: Duration, received: String)
    /// The bytes are not an HTTP/1.1 response.
    case malformed(String)
    /// The server could not be started, or the client could not reach it.
    case cannotStart(String)
    /// A client on a test's ``LoopKitTesting/LoopDriver`` was called off the driver's thread; the message
    /// says what to do instead.
    case wrongThread(String)
    /// ``HTTPTestClient/nextEvent()`` read a response that is not an event stream (not `200`, or not
    /// `Content-Type: text/event-stream`): here it is, whole.
    case notAnEventStream(HTTPTestResponse)
    /// An HTTP/2 mode (``HTTPTestMode/inMemoryHTTP2``, ``HTTPTestMode/liveHTTP2``) was given bytes it
    /// cannot carry as an HTTP/2 request: not HTTP/1.1 (raw bad input is an HTTP/1 test), or an `Upgrade`
    /// (a WebSocket: the server does not offer WebSocket over HTTP/2). The reason says which.
    case notTranslatable(String)

    public var description: String {
        switch self {
        case .noResponse(let received):
            "no complete response and the loop is idle (the server waits for input or time); received: \(String(reflecting: received))"
        case .closedEarly(let received):
            "the server closed the connection before a whole response; received: \(String(reflecting: received))"
        case .timedOut(let after, let received):
            "no complete response within \(after); received: \(String(reflecting: received))"
        case .malformed(let reason):
            "not an HTTP/1.1 response: \(reason)"
        case .cannotStart(let reason):
            "cannot start the test server: \(reason)"
        case .wrongThread(let reason):
            reason
        case .notTranslatable(let reason):
            "cannot send this over HTTP/2: \(reason)"
        case .notAnEventStream(let response):
            "not an event stream: \(response.status.code) \(response.headerFields[.contentType] ?? "with no Content-Type"), body \(String(reflecting: response.text))"
        }
    }
}
