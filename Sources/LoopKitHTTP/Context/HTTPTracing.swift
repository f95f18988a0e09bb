import HTTPTypes
import Tracing

/// The tracer and instrument a server uses, resolved once when it starts; nil when both are no-ops,
/// so that a server without tracing does no tracing work at all per request.
struct HTTPTracing: Sendable {
    let tracer: any Tracer
    let instrument: any Instrument
    /// False when the tracer is the no-op one (the instrument may still extract context).
    let startsSpans: Bool

    /// The configured tracer, else the `InstrumentationSystem`'s instrument and tracer (including one
    /// bound by `withTracer` around the caller); nil when neither does anything.
    static func resolve(_ configured: (any Tracer)?) -> HTTPTracing? {
        if let configured {
            if configured is NoOpTracer { return nil }
            return HTTPTracing(tracer: configured, instrument: configured, startsSpans: true)
        }
        let instrument = InstrumentationSystem.instrument
        if instrument is NoOpInstrument || instrument is NoOpTracer { return nil }
        let tracer = InstrumentationSystem.tracer
        return HTTPTracing(tracer: tracer, instrument: instrument, startsSpans: !(tracer is NoOpTracer))
    }

    /// The request's context, extracted from its fields by the instrument; a malformed `traceparent`
    /// (W3C Trace Context, §3.2) hides it and `tracestate` from the instrument, so the request goes on
    /// with a fresh context.
    func extract(from fields: HTTPFields) -> ServiceContext {
        var context = ServiceContext.topLevel
        let carrier = HTTPTraceCarrier(fields: fields)
        instrument.extract(carrier, into: &context, using: HTTPTraceCarrier.Extractor())
        return context
    }

    /// Starts the server span of a request, named `METHOD ROUTE` (`METHOD` without a route), with the
    /// OpenTelemetry HTTP server attributes known at the head.
    func startSpan(method: HTTPRequest.Method, path: Substring, route: String?, scheme: String,
                   context: ServiceContext) -> any Span {
        let name = route.map { method.rawValue + " " + $0 } ?? method.rawValue
        let span = tracer.startSpan(name, context: context, ofKind: .server, at: DefaultTracerClock.now,
                                    function: "request", file: "LoopKitHTTP/HTTPConnection.swift", line: 0)
        var attributes = span.attributes
        attributes["http.request.method"] = method.rawValue
        attributes["url.path"] = String(path)
        attributes["url.scheme"] = scheme
        if let route { attributes["http.route"] = route }
        span.attributes = attributes
        return span
    }

    /// Records the status on a request's span (5xx marks it failed: OpenTelemetry's rule for servers).
    static func record(status: Int, on span: any Span) {
        span.attributes["http.response.status_code"] = status
        if status >= 500 { span.setStatus(SpanStatus(code: .error)) }
    }
}

/// A request's fields as an instrument's carrier, with `traceparent` checked first.
struct HTTPTraceCarrier: Sendable {
    let fields: HTTPFields
    /// False when `traceparent` is present and malformed: neither it nor `tracestate` is given out.
    let traceParentIsUsable: Bool

    init(fields: HTTPFields) {
        self.fields = fields
        if let value = fields[Self.traceParent] {
            traceParentIsUsable = Self.isValidTraceParent(value)
        } else {
            traceParentIsUsable = true
        }
    }

    static let traceParent = HTTPField.Name("traceparent")!
    static let traceState = HTTPField.Name("tracestate")!

    /// Reads the carrier's fields by name (case-insensitive), one value per name (repeated fields joined
    /// with `,`, as RFC 9110 allows for list fields such as `tracestate`).
    struct Extractor: Tracing.Extractor {
        func extract(key: String, from carrier: HTTPTraceCarrier) -> String? {
            guard let name = HTTPField.Name(key) else { return nil }
            if !carrier.traceParentIsUsable && (name == HTTPTraceCarrier.traceParent || name == HTTPTraceCarrier.traceState) {
                return nil
            }
            let values = carrier.fields[values: name]
            return values.isEmpty ? nil : values.joined(separator: ",")
        }
    }

    /// W3C Trace Context `traceparent`: `version-traceid-parentid-flags`, lowercase hex; version `ff`,
    /// an all-zero trace or parent id are invalid; version `00` is exactly 55 characters, a later version
    /// may append `-…`.
    static func isValidTraceParent(_ value: String) -> Bool {
        let bytes = Array(value.utf8)
        guard bytes.count >= 55 else { return false }
        func isHex(_ range: Range<Int>) -> Bool {
            bytes[range].allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) }
        }
        func isZero(_ range: Range<Int>) -> Bool { bytes[range].allSatisfy { $0 == 0x30 } }
        let dash = UInt8(ascii: "-")
        guard isHex(0..<2), bytes[2] == dash, isHex(3..<35), bytes[35] == dash, isHex(36..<52), bytes[52] == dash,
              isHex(53..<55) else { return false }
        guard !(bytes[0] == UInt8(ascii: "f") && bytes[1] == UInt8(ascii: "f")) else { return false }
        guard !isZero(3..<35), !isZero(36..<52) else { return false }
        if bytes[0] == UInt8(ascii: "0") && bytes[1] == UInt8(ascii: "0") { return bytes.count == 55 }
        return bytes.count == 55 || bytes[55] == dash
    }
}
