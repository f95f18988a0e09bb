/// Why a request made with ``HTTPClient`` failed: a kind to switch on and a message to log, with libcurl's
/// own text when curl's engine reported it (the own HTTP/1.1 engine's are its own).
///
/// A plain value; safe from any thread.
public struct HTTPClientError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kinds of failure.
    public enum Kind: Sendable, Hashable {
        /// The request cannot be sent: no scheme or authority, a URL curl refuses, an unsupported scheme.
        case invalidRequest
        /// No connection: the name did not resolve, the connect was refused.
        case connectFailed
        /// The connect or the whole request passed its deadline.
        case deadlineExceeded
        /// The TLS handshake failed or the server's certificate was refused (wrong name, unknown CA).
        case tls
        /// The proxy could not be reached or refused the tunnel.
        case proxy
        /// More redirects than ``HTTPClient/Configuration/RedirectPolicy/follow(maximum:)`` allows.
        case tooManyRedirects
        /// A compressed body decoded past the size or ratio limit of ``HTTPClient/Configuration/Decompression``.
        case decompressionLimitExceeded
        /// ``HTTPClientResponse/Body/collect(upTo:)`` found more bytes than its limit.
        case responseTooLarge
        /// The awaiting task was cancelled, or the response's body was dropped unread.
        case cancelled
        /// The client was shut down (``HTTPClient/shutdown()`` or its last reference dropped) or its loop
        /// shut down before the request ended.
        case shutDown
        /// The request body's sequence threw.
        case requestBodyFailed
        /// Any other transport failure (a reset connection, a malformed response, …).
        case transport
    }

    /// What went wrong.
    public let kind: Kind
    /// A sentence for a log: what the client was doing, and curl's text when curl reported the failure.
    public let message: String
    /// libcurl's `CURLcode` when curl's engine reported the failure, else nil (always nil for a request of
    /// the own engine, ``HTTPClient/Configuration/Engine/automatic``).
    public let curlCode: Int32?

    /// Creates an error (for tests of code that calls the client).
    public init(_ kind: Kind, _ message: String, curlCode: Int32? = nil) {
        self.kind = kind
        self.message = message
        self.curlCode = curlCode
    }

    public var description: String { "HTTPClientError.\(kind): \(message)" }

    /// The error for a transfer curl ended with `code`, with its text and the detail curl wrote.
    static func curl(_ code: Int32, detail: String) -> HTTPClientError {
        let kind: Kind =
            switch code {
            case CurlCode.unsupportedProtocol, CurlCode.malformedURL: .invalidRequest
            case CurlCode.couldNotResolveHost, CurlCode.couldNotConnect: .connectFailed
            case CurlCode.timedOut: .deadlineExceeded
            case CurlCode.tooManyRedirects: .tooManyRedirects
            case CurlCode.couldNotResolveProxy, CurlCode.proxy: .proxy
            case _ where CurlCode.tls.contains(code): .tls
            default: .transport
            }
        let text = CurlGlobal.describe(code)
        let message = detail.isEmpty || detail == text ? "curl: \(text) (CURLcode \(code))" : "curl: \(text) (CURLcode \(code)): \(detail)"
        return HTTPClientError(kind, message, curlCode: code)
    }
}
