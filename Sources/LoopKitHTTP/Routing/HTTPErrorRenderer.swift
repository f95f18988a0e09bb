import HTTPTypes

/// How the server writes the response to a failure: an error a handler, a middleware or an upgrade check
/// throws (an ``HTTPError``, or any other error, answered 500), a WebSocket upgrade refused before its `101`
/// (``WebSocketUpgradeDecision/refuse(status:)``, the handshake's own 400 and 426, all with origin
/// ``Failure/Origin/thrown``), a request no route takes (404, 405, 501),
/// and a request the server refuses itself (the parser's 400, 413, 431, 417, 501 and 505, a slow head or
/// body's 408). One hook for all of them, set on the server's configuration
/// (``HTTPServer/Configuration/errorRenderer``):
///
/// ```swift
/// var configuration = HTTPServer.Configuration()
/// configuration.errorRenderer = .json   // {"error":{"status":404,"message":"Not Found"}}
/// ```
///
/// The renderer is synchronous, and called on the connection's loop thread where the failure happened: an
/// inline route that throws is answered in the read callback that parsed its request, with no task, as it
/// was before. Whatever the renderer returns goes out with the failure's ``Failure/headerFields`` added
/// (an `HTTPError`'s own, a 405's `Allow`) where the response has none of that name; a refusal keeps its
/// status, `Content-Length` framing and `Connection: close` whatever the renderer says.
///
/// A value type: safe from any thread; the closure must be safe to call from any loop's thread.
public struct HTTPErrorRenderer: Sendable {
    /// A failure to render: its status, what the client may be told, and the error behind it.
    ///
    /// A value handed to the renderer on the connection's loop thread.
    public struct Failure {
        /// Where a failure comes from.
        public enum Origin: Sendable, Hashable {
            /// A handler, a middleware or an upgrade check threw (``Failure/error`` is what it threw), or a
            /// handler left a body error uncaught (413).
            case thrown
            /// No route takes the request: 404, 405 (with `Allow`) or 501.
            case noRoute
            /// The server refused the request itself, before or without its handler: ``Failure/error`` is
            /// the parser's ``HTTPRequestError``, nil for a head or body that arrived too slowly (408). The
            /// connection closes after the response.
            case refusal
        }

        /// The response's status.
        public var status: HTTPResponse.Status
        /// What the client may be told: an ``HTTPError``'s message, else the status's reason phrase (an
        /// unexpected error's description is logged, never sent).
        public var message: String
        /// Fields the response carries whatever the renderer returns (an ``HTTPError``'s, a 405's `Allow`).
        public var headerFields: HTTPFields
        /// The error behind the failure: what was thrown, or the parser's ``HTTPRequestError``; nil for a
        /// request no route takes and for a 408.
        public var error: (any Error)?
        /// Where the failure comes from.
        public var origin: Origin

        /// A failure, as the server makes them (and as a test of a renderer may).
        ///
        /// - Parameters:
        ///   - status: The response's status.
        ///   - message: What the client may be told (nil: the status's reason phrase).
        ///   - headerFields: Fields the response must carry.
        ///   - error: The error behind it.
        ///   - origin: Where it comes from.
        public init(status: HTTPResponse.Status, message: String? = nil, headerFields: HTTPFields = [:],
                    error: (any Error)? = nil, origin: Origin = .thrown) {
            self.status = status
            self.message = message ?? status.reasonPhrase
            self.headerFields = headerFields
            self.error = error
            self.origin = origin
        }
    }

    private let render: @Sendable (Failure) -> HTTPServerResponse

    /// A renderer that answers each failure with what `render` returns.
    ///
    /// ```swift
    /// configuration.errorRenderer = HTTPErrorRenderer { failure in
    ///     .text("\(failure.status.code): \(failure.message)\n", status: failure.status)
    /// }
    /// ```
    ///
    /// - Parameter render: Called on the connection's loop thread, once per failure; it must not block.
    ///
    /// Safe from any thread.
    public init(_ render: @escaping @Sendable (Failure) -> HTTPServerResponse) {
        self.render = render
    }

    /// `text/plain; charset=utf-8`, the failure's message as the body (the default). Safe from any thread.
    public static let plainText = HTTPErrorRenderer { failure in .text(failure.message, status: failure.status) }

    /// `application/json; charset=utf-8`, the failure as `{"error":{"status":404,"message":"Not Found"}}`
    /// (the message escaped as RFC 8259 says). Safe from any thread.
    public static let json = HTTPErrorRenderer { failure in
        var body = #"{"error":{"status":"#
        body += String(failure.status.code)
        body += #","message":"#
        appendJSONString(failure.message, to: &body)
        body += "}}"
        return HTTPServerResponse(status: failure.status, headerFields: JSONCoders.contentTypeFields, body: .bytes(Bytes(body)))
    }

    /// The response for `failure`: the renderer's, with the failure's fields of names it lacks. Safe from
    /// any thread (the server calls it on the connection's loop thread); a custom renderer may call another
    /// (`HTTPErrorRenderer.json.response(for: failure)`) and adjust what it returns.
    ///
    /// - Parameter failure: What failed.
    /// - Returns: The response to send.
    public func response(for failure: Failure) -> HTTPServerResponse {
        var response = render(failure)
        guard !failure.headerFields.isEmpty else { return response }
        let rendered = Set(response.headerFields.map(\.name))
        for field in failure.headerFields where !rendered.contains(field.name) { response.headerFields.append(field) }
        return response
    }

    /// Appends `string` as a JSON string (RFC 8259 §7: quotes, backslashes and control characters escaped).
    static func appendJSONString(_ string: String, to json: inout String) {
        json += "\""
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": json += "\\\""
            case "\\": json += "\\\\"
            case "\n": json += "\\n"
            case "\r": json += "\\r"
            case "\t": json += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                json += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: json.unicodeScalars.append(scalar)
            }
        }
        json += "\""
    }
}
