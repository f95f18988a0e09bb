import HTTPTypes
import Logging

// Errors to responses, in one place: what no route takes, what escapes a handler, a middleware or a route
// asked to upgrade, a body error a handler did not catch, and what the codec refuses itself. Each becomes
// an `HTTPErrorRenderer.Failure` and goes through the configuration's one renderer (synchronous: an inline
// route that throws is still answered inline, with no task).

extension HTTPDispatcher {
    /// The answer to a request no route takes: 404, 405 with `Allow`, 501 (rendered), or 204 with `Allow`
    /// to `OPTIONS` (no failure).
    static func response(for resolution: HTTPRouter.Resolution, renderer: HTTPErrorRenderer) -> HTTPServerResponse {
        switch resolution {
        case .methodNotAllowed(let allow):
            let fields: HTTPFields = [.allow: allow.map(\.rawValue).joined(separator: ", ")]
            return renderer.response(for: .init(status: .methodNotAllowed, headerFields: fields, origin: .noRoute))
        case .options(let allow):
            return HTTPServerResponse(status: .noContent, headerFields: [.allow: allow.map(\.rawValue).joined(separator: ", ")])
        case .notImplemented:
            return renderer.response(for: .init(status: .notImplemented, origin: .noRoute))
        case .notFound, .found:
            return renderer.response(for: .init(status: .notFound, origin: .noRoute))
        }
    }

    /// The response a handler's uncaught body error gets: 413 past a limit; none when the client has gone
    /// or a malformed body was answered already.
    static func response(for error: HTTPBodyError, renderer: HTTPErrorRenderer) -> HTTPServerResponse? {
        switch error {
        case .tooLarge: renderer.response(for: .init(status: .contentTooLarge, error: error))
        case .connectionClosed, .malformed: nil
        }
    }

    /// What a handler (or a chain) that threw answers: a body error as
    /// ``response(for:renderer:)-(HTTPBodyError,_)``, anything else as ``answering(_:path:logger:renderer:)``.
    static func answer(_ error: any Error, path: some StringProtocol, logger: Logger,
                       renderer: HTTPErrorRenderer) -> HTTPServerResponse? {
        if let error = error as? HTTPBodyError { return response(for: error, renderer: renderer) }
        return answering(error, path: path, logger: logger, renderer: renderer)
    }

    /// What the server answers when a handler (or middleware, or an upgrade check) throws `error` for the
    /// request to `path`: an ``HTTPError`` with its status, message and fields, logged at `debug`; any
    /// other error 500, logged at `error` (its description is never sent). Rendered by `renderer`.
    static func answering(_ error: any Error, path: some StringProtocol, logger: Logger,
                          renderer: HTTPErrorRenderer) -> HTTPServerResponse {
        if let error = error as? HTTPError {
            logger.debug("handler answered with an error", metadata: ["path": "\(path)", "status": "\(error.status.code)"])
            return renderer.response(for: .init(status: error.status, message: error.message, headerFields: error.headerFields,
                                                error: error))
        }
        logger.error("handler failed", metadata: ["path": "\(path)", "error": "\(error)"])
        return renderer.response(for: .init(status: .internalServerError, error: error))
    }

    /// The response to a request the codec refuses itself (`error` nil for a slow head or body's 408):
    /// the deprecated ``HTTPServer/Configuration/refusalResponse`` when one is set, else the renderer's.
    /// The codec sends it with `status` whatever it says.
    static func refusal(_ status: HTTPResponse.Status, error: HTTPRequestError?,
                        configuration: HTTPServer.Configuration) -> HTTPServerResponse {
        if let legacy = configuration.legacyRefusalResponse { return legacy(status, error) }
        return configuration.errorRenderer.response(for: .init(status: status, error: error, origin: .refusal))
    }
}
