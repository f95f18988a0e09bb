import HTTPTypes
import Logging
import LoopKit
import LoopKitNet

// What the HTTP/1 codec refuses itself: a request it cannot parse, a body over its limit, a head or body
// too slow. It answers and closes; the request's lifecycle (its access line, the middleware's
// `responseEnded`) goes through the dispatcher (``HTTPDispatcher/refused(_:bodyBytes:on:)``).

extension HTTPConnection {
    /// The parser failed (or a body passed the server's limit): refuse, unless a streamed body's handler
    /// has answered already (the connection is then cut).
    func refuse(_ error: HTTPRequestError) {
        // A client's mistake, not the server's: at `debug` (its access line is at `info`), so that a client
        // cannot fill a production log with errors.
        if context.logger.logLevel <= .debug {
            context.logger.debug("refused request", metadata: ["status": "\(error.status.code)", "reason": "\(error)"])
        }
        if let streamedBody {  // a malformed body under a running handler
            self.streamedBody = nil
            streamedBody.end(.failure(.malformed(error)))
            if HTTPDispatcher.hasResponded(on: self) {
                tcp.abort()
                return
            }
        }
        guard case .refuse(let status) = machine.parseFailed(error) else { return }
        writeRefusal(status, error: error)
    }

    /// The streamed body passed its route's limit: answer 413 unless a response has begun, then close.
    func streamedBodyFailed() {
        streamedBody = nil
        if HTTPDispatcher.hasResponded(on: self) {
            tcp.abort()
        } else {
            _ = machine.parseFailed(.bodyTooLarge)
            writeRefusal(.contentTooLarge)
        }
    }

    /// Answers a request the server refuses itself (a parser error, a body over the limit, a slow head or
    /// body) and closes: as any response, with a body (``HTTPServer/Configuration/errorRenderer``'s, the
    /// reason phrase by default), the request id and an access line, and through the middleware's
    /// `responseEnded` when the head had arrived.
    func writeRefusal(_ status: HTTPResponse.Status, error: HTTPRequestError? = nil) {
        context.dateCache.refresh()
        var response = HTTPDispatcher.refusal(status, error: error, configuration: context.configuration)
        response.status = status
        let body = response.body.bytes  // a renderer's streamed body is sent empty, as before
        var echoedID: HTTPEchoedRequestID?
        if let field = context.echoedRequestIDField {
            echoedID = HTTPEchoedRequestID(field: field, value: HTTPDispatcher.requestID(on: self) ?? context.requestIDs.next())
        }
        let date = context.dateCache.fieldLine
        body.withUnsafeBytes { body in
            writeEncoded(estimate: Self.headEstimate + body.count) { encoder in
                encoder.appendHead(status: status, fields: response.headerFields, framing: .length(body.count), keepAlive: false, http10: false,
                                   date: date, requestID: echoedID)
                encoder.appendBody(body)
            }
        }
        HTTPDispatcher.refused(status, bodyBytes: body.count, on: self)
        tcp.closeAfterDrainingInput()  // the client may still be sending: the refusal must not be lost to a reset
    }
}
