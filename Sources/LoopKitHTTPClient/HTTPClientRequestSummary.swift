import HTTPTypes

/// What one request did, told to ``HTTPClient/Configuration/requestEnded`` once it has ended: its method and
/// server, the status when a response head arrived, the failure, how long it took, the body bytes each way,
/// and what the engine did for it (redirects followed, retries, connections opened).
///
/// `LoopKitMetrics`' `HTTPClientMetrics` turns these into swift-metrics; a test or a log can read them too.
///
/// A plain value; safe from any thread.
public struct HTTPClientRequestSummary: Sendable, Hashable {
    /// The request's method.
    public var method: HTTPRequest.Method
    /// The request's authority as given (`host:port`, `host`, `[::1]:8080`): the first server, not a
    /// redirect's.
    public var authority: String
    /// The status of the response (the last one when redirects were followed); nil when no head arrived.
    public var status: HTTPResponse.Status?
    /// Why the request failed, nil when it succeeded. A failure after the head (the body's transfer broke, a
    /// decoding limit, the body dropped unread) has both a status and an error.
    public var error: HTTPClientError?
    /// From the call to ``HTTPClient/execute(_:body:deadline:)`` (on the loop) to the end of the response's
    /// body, or to the failure.
    public var duration: Duration
    /// Request body bytes sent (CURLINFO_SIZE_UPLOAD_T), the last attempt's.
    public var requestBodyBytes: Int
    /// Response body bytes received as sent, before decoding (CURLINFO_SIZE_DOWNLOAD_T).
    public var responseBodyBytes: Int
    /// Redirects followed (CURLINFO_REDIRECT_COUNT).
    public var redirects: Int
    /// Times the request was sent again on a new connection because the pooled one it went out on had been
    /// closed by the server (or an HTTP/2 stream was refused).
    public var retries: Int
    /// Connections opened for the request (CURLINFO_NUM_CONNECTS): 0 when it went out on a pooled one.
    public var connectionsOpened: Int
    /// Whether the request went out at all (a connection was there to send it on): false for a request that
    /// failed before (no connection, an invalid request, cancelled before it started).
    public var wasSent: Bool

    /// Whether the request went out on a connection that was open already (pooled, or an HTTP/2
    /// connection shared with other requests).
    public var reusedConnection: Bool { wasSent && connectionsOpened == 0 }

    /// Creates a summary (for tests of an observer).
    public init(
        method: HTTPRequest.Method, authority: String, status: HTTPResponse.Status? = nil, error: HTTPClientError? = nil,
        duration: Duration = .zero, requestBodyBytes: Int = 0, responseBodyBytes: Int = 0, redirects: Int = 0, retries: Int = 0,
        connectionsOpened: Int = 0, wasSent: Bool = false
    ) {
        self.method = method
        self.authority = authority
        self.status = status
        self.error = error
        self.duration = duration
        self.requestBodyBytes = requestBodyBytes
        self.responseBodyBytes = responseBodyBytes
        self.redirects = redirects
        self.retries = retries
        self.connectionsOpened = connectionsOpened
        self.wasSent = wasSent
    }
}
