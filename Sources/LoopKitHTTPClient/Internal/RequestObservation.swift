import HTTPTypes

/// One request's measurement for ``HTTPClient/Configuration/requestEnded``, made only when that is set: when
/// the request started, and whether it was reported yet (a request is reported once, by its transfer's end
/// or, when it never got a transfer, by its failure). Loop thread only.
final class RequestObservation {
    private let method: HTTPRequest.Method
    private let authority: String
    private let began = ContinuousClock.now
    private let report: @Sendable (HTTPClientRequestSummary) -> Void
    private var isReported = false

    init(_ request: HTTPRequest, report: @escaping @Sendable (HTTPClientRequestSummary) -> Void) {
        method = request.method
        authority = request.authority ?? ""
        self.report = report
    }

    /// `completion`, reporting a failure that reaches it before the request had a transfer (an invalid
    /// request, a shut-down client, cancelled before it started): a transfer's end reports the rest.
    func reportingEarlyFailures(
        _ completion: @escaping (Result<HTTPClientResponse, HTTPClientError>) -> Void
    ) -> (Result<HTTPClientResponse, HTTPClientError>) -> Void {
        { [self] result in
            if case .failure(let error) = result, !isReported {
                isReported = true
                report(HTTPClientRequestSummary(method: method, authority: authority, error: error, duration: began.duration(to: .now)))
            }
            completion(result)
        }
    }

    /// Reports `transfer`'s end with `error` (nil: success). Outside curl, before the transfer's handle is
    /// removed from the multi handle (curl's figures are the transfer's own until the handle's next use).
    func ended(_ transfer: Transfer, error: HTTPClientError?) {
        guard !isReported else { return }
        isReported = true
        var summary = HTTPClientRequestSummary(method: method, authority: authority, status: transfer.status, error: error,
                                               duration: began.duration(to: .now))
        // curl's figures are reset when a transfer starts sending: before that (no request went out) they
        // may still be the handle's last transfer's.
        if transfer.requestsSent > 0 {
            let easy = transfer.easy
            summary.wasSent = true
            summary.redirects = easy.redirectCount
            summary.retries = max(0, transfer.requestsSent - 1 - summary.redirects)
            summary.connectionsOpened = easy.connectionsOpened
            summary.requestBodyBytes = easy.bytesSent
            summary.responseBodyBytes = easy.bytesReceived
        }
        report(summary)
    }
}
