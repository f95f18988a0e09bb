import Logging

/// An access log written as middleware: one line per response, `METHOD TARGET STATUS` as the built-in
/// log writes it, through ``HTTPServerRequest/logger`` (so with `request.id`), with the body bytes and
/// the duration in its metadata, when the response has ended.
///
/// ```swift
/// var configuration = HTTPServer.Configuration(port: 8080)
/// configuration.logsAccess = false          // the built-in line would repeat this one
/// router.use(AccessLogMiddleware())
/// ```
/// Added first, it sees every response as sent, including those of the middleware after it. A
/// connection that closes before its response ended logs `-` for the status (or the status, when one
/// began) with `complete: false`.
///
/// The server's built-in access log (``HTTPServer/Configuration/logsAccess``) stays the default: it is
/// the cheaper of the two (no metadata, no copy of the logger per request), and what existing servers
/// already log.
///
/// Safe from any thread; its method runs on the connection's loop thread.
public struct AccessLogMiddleware: HTTPMiddleware {
    /// The level of the lines (default `info`, the built-in log's).
    public var level: Logger.Level

    /// An access log at `level`.
    ///
    /// - Parameter level: The level of the lines.
    public init(level: Logger.Level = .info) {
        self.level = level
    }

    /// Writes the line.
    ///
    /// - Parameters:
    ///   - summary: The status, bytes and times.
    ///   - request: The request.
    ///
    /// Called on the connection's loop thread.
    public func responseEnded(_ summary: HTTPResponseSummary, for request: HTTPServerRequest) {
        let logger = request.logger
        guard logger.logLevel <= level else { return }
        var line = request.head.method.rawValue
        line += " "
        line += request.head.path ?? ""
        line += " "
        line += summary.status.map { String($0.code) } ?? "-"
        var metadata: Logger.Metadata = [
            "bytes": .stringConvertible(summary.bodyBytes),
            "duration_us": .stringConvertible(summary.duration / .microseconds(1)),
        ]
        if !summary.isComplete { metadata["complete"] = "false" }
        logger.log(level: level, Logger.Message(stringLiteral: line), metadata: metadata, source: "LoopKitHTTP")
    }
}
