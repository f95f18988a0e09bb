import HTTPTypes

/// Cross-origin resource sharing (the Fetch standard's CORS protocol) as middleware: answers a
/// preflight (`OPTIONS` with `Origin` and `Access-Control-Request-Method`) at once, without the routes,
/// and adds `Access-Control-Allow-Origin` to the responses to allowed origins on the way out.
///
/// ```swift
/// router.use(CORSMiddleware(allowedOrigin: .only(["https://app.example"]), allowsCredentials: true))
/// ```
/// Add it before middleware that may answer early (an authentication check), so their answers carry
/// the CORS fields too and a browser can read them. A preflight from an origin not allowed gets 204
/// without CORS fields, which the browser treats as a refusal. A request without `Origin` is left alone.
///
/// Safe from any thread; its methods run on the connection's loop thread.
public struct CORSMiddleware: HTTPMiddleware {
    /// Which origins may read the responses.
    public enum AllowedOrigin: Sendable, Equatable {
        /// Any origin (`*`, or the request's origin when credentials are allowed, as the standard requires).
        case any
        /// These origins (`https://app.example`), compared exactly; the request's origin is echoed.
        case only([String])
    }

    /// Which origins may read the responses (default any).
    public var allowedOrigin: AllowedOrigin
    /// The methods a preflight allows (default `GET`, `HEAD`, `POST`, `PUT`, `PATCH`, `DELETE`).
    public var allowedMethods: [HTTPRequest.Method]
    /// The request fields a preflight allows; empty (default): those the preflight asks for.
    public var allowedHeaders: [HTTPField.Name]
    /// The response fields a page may read beyond the safelisted ones (default none).
    public var exposedHeaders: [HTTPField.Name]
    /// Whether requests with credentials (cookies, `Authorization`) are allowed (default false).
    public var allowsCredentials: Bool
    /// How long a browser may keep a preflight's answer (default 10 minutes); nil: not said.
    public var maxAge: Duration?

    /// CORS with these rules; every one has a default.
    ///
    /// - Parameters:
    ///   - allowedOrigin: Which origins may read the responses.
    ///   - allowedMethods: The methods a preflight allows.
    ///   - allowedHeaders: The request fields a preflight allows; empty: those it asks for.
    ///   - exposedHeaders: The response fields a page may read.
    ///   - allowsCredentials: Whether requests with credentials are allowed.
    ///   - maxAge: How long a browser may keep a preflight's answer.
    public init(allowedOrigin: AllowedOrigin = .any,
                allowedMethods: [HTTPRequest.Method] = [.get, .head, .post, .put, .patch, .delete],
                allowedHeaders: [HTTPField.Name] = [], exposedHeaders: [HTTPField.Name] = [],
                allowsCredentials: Bool = false, maxAge: Duration? = .seconds(600)) {
        self.allowedOrigin = allowedOrigin
        self.allowedMethods = allowedMethods
        self.allowedHeaders = allowedHeaders
        self.exposedHeaders = exposedHeaders
        self.allowsCredentials = allowsCredentials
        self.maxAge = maxAge
    }

    /// Answers a preflight with 204 and the CORS fields; lets any other request through.
    ///
    /// - Parameter request: The request.
    /// - Returns: The preflight's answer, or nil.
    ///
    /// Called on the connection's loop thread.
    public func handleRequest(_ request: inout HTTPServerRequest) throws -> HTTPServerResponse? {
        let fields = request.head.headerFields
        guard request.head.method == .options, let origin = fields[.origin],
              fields[.accessControlRequestMethod] != nil else { return nil }
        var response = HTTPServerResponse(status: .noContent)
        guard let allowOrigin = allowOriginValue(for: origin) else { return response }
        response.headerFields[.accessControlAllowOrigin] = allowOrigin
        if allowOrigin != "*" { response.headerFields[.vary] = "Origin" }
        if allowsCredentials { response.headerFields[.accessControlAllowCredentials] = "true" }
        response.headerFields[.accessControlAllowMethods] = allowedMethods.map(\.rawValue).joined(separator: ", ")
        if !allowedHeaders.isEmpty {
            response.headerFields[.accessControlAllowHeaders] = allowedHeaders.map(\.rawName).joined(separator: ", ")
        } else if let asked = fields[.accessControlRequestHeaders] {
            response.headerFields[.accessControlAllowHeaders] = asked
        }
        if let maxAge { response.headerFields[.accessControlMaxAge] = String(maxAge.components.seconds) }
        return response
    }

    /// Adds `Access-Control-Allow-Origin` (and `Vary: Origin`, credentials, exposed fields) to the
    /// response to a request from an allowed origin.
    ///
    /// - Parameters:
    ///   - response: The response.
    ///   - request: The request.
    ///
    /// Called on the connection's loop thread.
    public func handleResponse(_ response: inout HTTPServerResponse, for request: HTTPServerRequest) {
        guard let origin = request.head.headerFields[.origin], let allowOrigin = allowOriginValue(for: origin) else { return }
        response.headerFields[.accessControlAllowOrigin] = allowOrigin
        if allowOrigin != "*" { response.headerFields.append(HTTPField(name: .vary, value: "Origin")) }
        if allowsCredentials { response.headerFields[.accessControlAllowCredentials] = "true" }
        if !exposedHeaders.isEmpty {
            response.headerFields[.accessControlExposeHeaders] = exposedHeaders.map(\.rawName).joined(separator: ", ")
        }
    }

    /// The `Access-Control-Allow-Origin` value for `origin`, nil when it is not allowed.
    private func allowOriginValue(for origin: String) -> String? {
        switch allowedOrigin {
        case .any: allowsCredentials ? origin : "*"
        case .only(let origins): origins.contains(origin) ? origin : nil
        }
    }
}
