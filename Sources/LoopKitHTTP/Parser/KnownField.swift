import HTTPTypes

/// Field names the parser recognises without building strings: the ones that decide framing, and the
/// ones nearly every client sends (their `HTTPField.Name` is a static, so no allocation).
enum KnownField {
    case host, contentLength, transferEncoding, connection, expect
    /// `X-Request-ID`, the default ``HTTPServer/Configuration/requestIDField``: flagged so that a request
    /// without it needs no field lookup for its id.
    case requestID
    /// Names stored often, matched so that building a request's fields makes no name of them: kinds with
    /// no payload, so a match returns a byte and the scan that only checks a line releases nothing (an
    /// `HTTPField.Name` payload cost two releases a line).
    case accept, cookie, origin, userAgent, contentType, authorization, cacheControl, acceptEncoding, acceptLanguage
    case other

    /// The name to store in `HTTPFields`, when it is a known one.
    var name: HTTPField.Name? {
        switch self {
        case .host: nil  // carried as the authority
        case .contentLength: .contentLength
        case .transferEncoding: .transferEncoding
        case .connection: .connection
        case .expect: .expect
        case .requestID: HTTPFieldName.requestID
        case .accept: .accept
        case .cookie: .cookie
        case .origin: .origin
        case .userAgent: .userAgent
        case .contentType: .contentType
        case .authorization: .authorization
        case .cacheControl: .cacheControl
        case .acceptEncoding: .acceptEncoding
        case .acceptLanguage: .acceptLanguage
        case .other: nil
        }
    }

    /// Matches a field name, case-insensitively.
    static func match(_ name: UnsafeRawBufferPointer) -> KnownField {
        switch name.count {
        case 4:
            if ASCII.equalsIgnoringCase(name, "host") { return .host }
        case 6:
            if ASCII.equalsIgnoringCase(name, "accept") { return .accept }
            if ASCII.equalsIgnoringCase(name, "expect") { return .expect }
            if ASCII.equalsIgnoringCase(name, "cookie") { return .cookie }
            if ASCII.equalsIgnoringCase(name, "origin") { return .origin }
        case 10:
            if ASCII.equalsIgnoringCase(name, "user-agent") { return .userAgent }
            if ASCII.equalsIgnoringCase(name, "connection") { return .connection }
        case 12:
            if ASCII.equalsIgnoringCase(name, "content-type") { return .contentType }
            if ASCII.equalsIgnoringCase(name, "x-request-id") { return .requestID }
        case 13:
            if ASCII.equalsIgnoringCase(name, "authorization") { return .authorization }
            if ASCII.equalsIgnoringCase(name, "cache-control") { return .cacheControl }
        case 14:
            if ASCII.equalsIgnoringCase(name, "content-length") { return .contentLength }
        case 15:
            if ASCII.equalsIgnoringCase(name, "accept-encoding") { return .acceptEncoding }
            if ASCII.equalsIgnoringCase(name, "accept-language") { return .acceptLanguage }
        case 17:
            if ASCII.equalsIgnoringCase(name, "transfer-encoding") { return .transferEncoding }
        default:
            break
        }
        return .other
    }
}

/// Field names the server refers to that swift-http-types has no static for.
enum HTTPFieldName {
    /// `X-Request-ID`.
    static let requestID = HTTPField.Name("X-Request-ID")!
}
