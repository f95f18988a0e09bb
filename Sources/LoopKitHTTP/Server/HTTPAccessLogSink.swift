/// Where the built-in access log writes its lines as bytes, in place of the server's `Logger`.
///
/// Through swift-log, each access line is a `LogEvent` with its message string, copied through the
/// handler's existential: about 1.5k instructions a request, more than a fifth of a keep-alive request's
/// whole cost. A sink is given the line's bytes, written on the stack, and appends them to its own buffer.
/// Set one with ``HTTPServer/Configuration/accessLogSink``:
///
/// ```swift
/// final class StandardErrorLines: HTTPAccessLogSink {
///     func appendAccessLine(_ line: UnsafeRawBufferPointer) {
///         // append `line` and a line end to a buffer a writer thread sends in batches
///     }
/// }
/// configuration.accessLogSink = StandardErrorLines()
/// ```
///
/// One sink serves every loop of the server, so it is `Sendable`: ``appendAccessLine(_:)`` is called on
/// the thread of the loop that answered the request, from any of the server's loops at once. A class, so
/// that the server holds it by one reference (an existential of a value copies through witnesses).
public protocol HTTPAccessLogSink: AnyObject, Sendable {
    /// Appends one access line: `METHOD TARGET STATUS` (`- - STATUS` for a request refused before its
    /// head was read), with no line end. The bytes are lent for the call only.
    func appendAccessLine(_ line: UnsafeRawBufferPointer)
}
