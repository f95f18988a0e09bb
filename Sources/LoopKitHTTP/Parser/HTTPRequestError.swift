import HTTPTypes

/// Why a request was refused: every rule of RFC 9112 the parser enforces, each with the status it answers.
///
/// The server answers the ``status`` and closes the connection: after any of these the rest of the
/// stream cannot be trusted (a request could be smuggled in what follows).
public enum HTTPRequestError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The request line is not `method SP request-target SP HTTP-version`.
    case malformedRequestLine
    /// The method is empty or holds a character that is not a token character.
    case invalidMethod
    /// The request target is empty or holds a control, space or non-ASCII byte.
    case invalidTarget
    /// The version is not `HTTP/DIGIT.DIGIT`.
    case malformedVersion
    /// A well-formed version other than HTTP/1.x (505).
    case unsupportedVersion(major: Int, minor: Int)
    /// A line ends with a bare LF or a bare CR.
    case invalidLineEnding
    /// A field line that starts with whitespace (obsolete line folding, RFC 9112 §5.2).
    case obsoleteLineFolding
    /// A field name that is empty, holds a non-token character, or is followed by whitespace before the colon.
    case invalidFieldName
    /// A field line without a colon.
    case missingColon
    /// A field value with a control character (CR, LF, NUL, …).
    case invalidFieldValue
    /// An HTTP/1.1 request without a `Host` field.
    case missingHost
    /// A request with more than one `Host` field.
    case multipleHosts
    /// A `Host` whose value is not `host[:port]` (RFC 9112 §3.2).
    case invalidHost
    /// A `Content-Length` that is not a plain decimal number.
    case invalidContentLength
    /// More than one `Content-Length` field, or a list of values.
    case multipleContentLengths
    /// Both `Transfer-Encoding` and `Content-Length`: the framing is ambiguous (request smuggling).
    case transferEncodingWithContentLength
    /// A `Transfer-Encoding` whose last coding is not `chunked`, or that applies `chunked` twice.
    case chunkedNotLast
    /// A `Transfer-Encoding` in an HTTP/1.0 request.
    case transferEncodingInHTTP10
    /// A transfer coding other than `chunked` (501).
    case unsupportedTransferCoding
    /// A chunk-size line that is not hexadecimal digits (with optional extensions), or is too long.
    case invalidChunkSize
    /// Chunk data not followed by CRLF.
    case invalidChunkTerminator
    /// The request line is longer than the limit (431).
    case requestLineTooLong
    /// The request head (or the trailer section) is larger than the limit (431).
    case headTooLarge
    /// More header fields than the limit (431).
    case tooManyFields
    /// The body is longer than the limit (413).
    case bodyTooLarge
    /// An HTTP/1.1 `Expect` with an expectation other than `100-continue` (417, RFC 9110 §10.1.1).
    case unsupportedExpectation

    /// The status the server answers before closing the connection.
    public var status: HTTPResponse.Status {
        switch self {
        case .requestLineTooLong, .headTooLarge, .tooManyFields: .requestHeaderFieldsTooLarge
        case .bodyTooLarge: .contentTooLarge
        case .unsupportedVersion: .httpVersionNotSupported
        case .unsupportedTransferCoding: .notImplemented
        case .unsupportedExpectation: .expectationFailed
        default: .badRequest
        }
    }

    /// A sentence saying what was wrong, for the error log.
    public var description: String {
        switch self {
        case .malformedRequestLine: "malformed request line"
        case .invalidMethod: "invalid method"
        case .invalidTarget: "invalid request target"
        case .malformedVersion: "malformed HTTP version"
        case .unsupportedVersion(let major, let minor): "unsupported HTTP version \(major).\(minor)"
        case .invalidLineEnding: "bare CR or LF as a line ending"
        case .obsoleteLineFolding: "obsolete line folding in a field"
        case .invalidFieldName: "invalid field name"
        case .missingColon: "field line without a colon"
        case .invalidFieldValue: "invalid character in a field value"
        case .missingHost: "HTTP/1.1 request without Host"
        case .multipleHosts: "more than one Host field"
        case .invalidHost: "Host is not host[:port]"
        case .invalidContentLength: "invalid Content-Length"
        case .multipleContentLengths: "more than one Content-Length"
        case .transferEncodingWithContentLength: "both Transfer-Encoding and Content-Length"
        case .chunkedNotLast: "Transfer-Encoding whose last coding is not chunked"
        case .transferEncodingInHTTP10: "Transfer-Encoding in an HTTP/1.0 request"
        case .unsupportedTransferCoding: "unsupported transfer coding"
        case .invalidChunkSize: "invalid chunk size"
        case .invalidChunkTerminator: "chunk data not followed by CRLF"
        case .requestLineTooLong: "request line too long"
        case .headTooLarge: "request head too large"
        case .tooManyFields: "too many header fields"
        case .bodyTooLarge: "body larger than the limit"
        case .unsupportedExpectation: "an expectation other than 100-continue"
        }
    }
}
