import HTTPTypes
import LoopKitNet

/// One request in flight: its curl handle, the head as it is parsed, the body's stream, the limits.
/// Loop thread only (curl calls it from inside curl_multi_socket_action and curl_easy_pause).
final class Transfer: CurlTransferDelegate {
    let easy: CurlEasy
    let stream: ResponseBodyStream
    let pump: RequestBodyPump?
    let handle: HTTPClientRequestHandle
    private let bytesBody: Bytes?
    private var bodyOffset = 0
    /// Told the head once, or the failure; nil after.
    private var completion: ((Result<HTTPClientResponse, HTTPClientError>) -> Void)?
    private let followsRedirects: Bool
    private let limits: (maximumSize: Int, maximumRatio: Int)?
    private var head = ResponseHeadParser()
    private(set) var headIsComplete = false
    /// Why the client stopped the transfer (a limit, cancellation, shutdown): reported instead of curl's code.
    var abortReason: HTTPClientError?
    private var decoded = 0
    /// The final head names a `Content-Encoding` (other than identity): curl decodes the body.
    private var isEncoded = false
    /// Runs `body` once curl has returned (a completion is never called from inside curl).
    private let later: (@escaping () -> Void) -> Void
    /// Makes the body's reader (which cancels the transfer when dropped).
    private let makeReader: (ResponseBodyStream) -> ResponseBodyReader
    /// Pauses receiving once curl has returned (the body's buffer reached its high water mark).
    private let pauseAfterCurl: () -> Void

    let id: TransferID
    /// Set when the client reports requests (``HTTPClient/Configuration/requestEnded``).
    var observation: RequestObservation?
    /// Requests sent for this transfer (curl's CURLOPT_PREREQFUNCTION, counted only while observed): one, plus
    /// one per redirect followed and per retry.
    private(set) var requestsSent = 0

    /// The final response's status once its head is complete.
    var status: HTTPResponse.Status? { headIsComplete ? head.status ?? HTTPResponse.Status(code: easy.responseCode) : nil }

    init(
        id: TransferID, easy: CurlEasy, stream: ResponseBodyStream, pump: RequestBodyPump?, bytesBody: Bytes?, handle: HTTPClientRequestHandle,
        followsRedirects: Bool, limits: (Int, Int)?, later: @escaping (@escaping () -> Void) -> Void,
        makeReader: @escaping (ResponseBodyStream) -> ResponseBodyReader, pauseAfterCurl: @escaping () -> Void,
        completion: @escaping (Result<HTTPClientResponse, HTTPClientError>) -> Void
    ) {
        self.id = id
        self.easy = easy
        self.stream = stream
        self.pump = pump
        self.bytesBody = bytesBody
        self.handle = handle
        self.followsRedirects = followsRedirects
        self.limits = limits
        self.later = later
        self.makeReader = makeReader
        self.pauseAfterCurl = pauseAfterCurl
        self.completion = completion
    }

    // MARK: curl's callbacks

    func curlReceivedHeaderLine(_ line: UnsafeRawBufferPointer) {
        guard !headIsComplete else { return }  // trailers
        guard case .end = head.read(line), let status = head.status else { return }
        if status.kind == .informational { return }
        if followsRedirects && head.hasLocation {
            switch status.code {
            case 301, 302, 303, 307, 308: return  // curl follows it: the next head is the response's
            default: break
            }
        }
        headIsComplete = true
        isEncoded = head.isEncoded
        deliverHead()
    }

    func curlReceivedBody(_ bytes: UnsafeRawBufferPointer) -> CurlWriteAnswer {
        guard abortReason == nil else { return .abort }
        if !headIsComplete {
            headIsComplete = true
            deliverHead()
        }
        let total = decoded + bytes.count
        // The limits are for decoding: a body sent as is may be as large as the server makes it.
        if let limits, isEncoded {
            if total > limits.maximumSize {
                abortReason = HTTPClientError(
                    .decompressionLimitExceeded, "the response body decodes to more than \(limits.maximumSize) bytes")
                return .abort
            }
            if total > 1024 * 1024 {
                let received = max(1, Int(easy.bytesReceived))
                if total / received > limits.maximumRatio {
                    abortReason = HTTPClientError(
                        .decompressionLimitExceeded,
                        "the response body decodes to more than \(limits.maximumRatio) times its \(received) encoded bytes")
                    return .abort
                }
            }
        }
        guard bytes.count > 0 else { return .took }
        switch stream.offer(Bytes(copying: bytes)) {
        case .taken:
            decoded = total
            return .took
        case .takenAtHighWater:
            // Paused once curl returns (curl_easy_pause): answering CURL_WRITEFUNC_PAUSE instead would
            // have curl copy the bytes it holds back, and hand them over again on resume.
            decoded = total
            pauseAfterCurl()
            return .took
        case .refused:
            return .pause
        }
    }

    func curlWantsBody(into buffer: UnsafeMutableRawBufferPointer) -> CurlReadAnswer {
        if let pump { return pump.read(into: buffer) }
        guard let bytesBody else { return .wrote(0) }
        let count = min(buffer.count, bytesBody.count - bodyOffset)
        guard count > 0 else { return .wrote(0) }
        let start = bytesBody.index(bytesBody.startIndex, offsetBy: bodyOffset)
        bytesBody[start..<(start + count)].withUnsafeBytes { source in
            buffer.baseAddress!.copyMemory(from: source.baseAddress!, byteCount: count)
        }
        bodyOffset += count
        return .wrote(count)
    }

    func curlWillSendRequest() { requestsSent += 1 }

    func curlRewindsBody(to offset: Int) -> Bool {
        guard pump == nil, let bytesBody, offset >= 0, offset <= bytesBody.count else { return offset == 0 && bytesBody == nil && pump == nil }
        bodyOffset = offset
        return true
    }

    // MARK: the end

    private func deliverHead() {
        guard let completion else { return }
        self.completion = nil
        var responseHead = HTTPResponse(status: head.status ?? HTTPResponse.Status(code: easy.responseCode))
        responseHead.headerFields = head.fields
        let response = HTTPClientResponse(head: responseHead, httpVersion: easy.httpVersion, body: .init(reader: makeReader(stream)))
        later { completion(.success(response)) }
    }

    /// curl finished the transfer (or the client ended it) with `error`, nil for success.
    func finish(_ error: HTTPClientError?) {
        pump?.cancel()
        if let error {
            if let completion {
                self.completion = nil
                later { completion(.failure(error)) }
            }
        } else if !headIsComplete {
            headIsComplete = true
            deliverHead()
        }
        stream.finish(error)
    }
}
