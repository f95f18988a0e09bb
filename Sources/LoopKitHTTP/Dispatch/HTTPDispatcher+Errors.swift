import HTTPTypes
import Logging

// Errors to responses, in one place: what no route takes, what escapes a handler, a middleware or a route
// asked to upgrade, and a body error a handler did not catch.

extension HTTPDispatcher {
    /// The answer to a request no route takes: 404, 405 or 204 with `Allow`, 501.
    static func response(for resolution: HTTPRouter.Resolution) -> HTTPServerResponse {
        switch resolution {
        case .methodNotAllowed(let allow):
            var response = HTTPServerResponse.text("Method Not Allowed", status: .methodNotAllowed)
            response.head.headerFields[.allow] = allow.map(\.rawValue).joined(separator: ", ")
            return response
        case .options(let allow):
            return HTTPServerResponse(status: .noContent, headerFields: [.allow: allow.map(\.rawValue).joined(separator: ", ")])
        case .notImplemented:
            return .text("Not Implemented", status: .notImplemented)
        case .notFound, .found:
            return .text("Not Found", status: .notFound)
        }
    }

    /// The response a handler's uncaught body error gets: 413 past a limit; none when the client has gone
    /// or a malformed body was answered already.
    static func response(for error: HTTPBodyError) -> HTTPServerResponse? {
        switch error {
        case .tooLarge: .text("Content Too Large", status: .contentTooLarge)
        case .connectionClosed, .malformed: nil
        }
    }

    /// What a handler (or a chain) that threw answers: a body error as ``response(for:)-(HTTPBodyError)``,
    /// an ``HTTPError`` as its response, anything else 500 (logged).
    static func answer(_ error: any Error, path: some StringProtocol, logger: Logger) -> HTTPServerResponse? {
        if let error = error as? HTTPBodyError { return response(for: error) }
        return .answering(error, path: path, logger: logger)
    }
}
