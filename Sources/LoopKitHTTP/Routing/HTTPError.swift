import HTTPTypes

/// An error a handler throws to answer with a status other than 500.
///
/// ```swift
/// router.get("/todos/:id") { request in
///     guard let todo = store.find(request.parameters["id"]) else { throw HTTPError(.notFound) }
///     return .text(todo.title)
/// }
/// ```
///
/// The server answers with its status, its message as a `text/plain` body (the status's reason phrase when
/// it has none) and its fields, logged at `debug`: a client's mistake, not the server's. Any other error a
/// handler throws is answered 500 and logged at `error`. Middleware sees the answer as any other response.
/// ``HTTPServer/Configuration/errorRenderer`` renders both another way (`.json`, or your own).
///
/// A value type: safe from any thread.
public struct HTTPError: Error, Sendable, CustomStringConvertible {
    /// The status to answer with.
    public var status: HTTPResponse.Status
    /// The response's body; nil: the status's reason phrase.
    public var message: String?
    /// More fields for the response (a `Location`, a `WWW-Authenticate`, a `Retry-After`).
    public var headerFields: HTTPFields

    /// An error answered with `status`.
    ///
    /// - Parameters:
    ///   - status: The status (4xx for a client's mistake; a 5xx other than 500 when that is what happened).
    ///   - message: The response's body; nil for the status's reason phrase.
    ///   - headerFields: More fields for the response.
    public init(_ status: HTTPResponse.Status, _ message: String? = nil, headerFields: HTTPFields = [:]) {
        self.status = status
        self.message = message
        self.headerFields = headerFields
    }

    /// The response the server sends for this error.
    public var response: HTTPServerResponse {
        var response = HTTPServerResponse.text(message ?? status.reasonPhrase, status: status)
        for field in headerFields { response.headerFields.append(field) }
        return response
    }

    public var description: String { "\(status.code) \(message ?? status.reasonPhrase)" }
}
