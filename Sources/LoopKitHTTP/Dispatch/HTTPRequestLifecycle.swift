import HTTPTypes
import Logging
import LoopKit
import Tracing

// A request's lifecycle, in one place: its context at the head (id, start, trace context, span), its
// access line, the request id echoed on its response, and its end (the span ended with the status, the
// middleware's `responseEnded` told what went out), for a response, a refusal, an upgrade or a close.

extension HTTPDispatcher {
    /// The client's id of a request whose head has arrived, when it sent a valid one (nil: the loop makes one).
    static func givenRequestID(in head: HTTPRequestHead, context: HTTPLoopContext) -> String? {
        if head.mayCarryRequestID || !context.requestIDFieldIsFlagged,
           let field = context.configuration.requestIDField, let given = head.request.headerFields[field],
           HTTPRequestIDGenerator.isValid(given) {
            return given
        }
        return nil
    }

    /// Tracing is on: the request's trace context, extracted from its fields, and, when the tracer starts
    /// spans, its span, both kept in the exchange's extras. Out of line, so that a request served without
    /// tracing carries none of its optionals and existentials.
    @inline(never)
    static func traceRequest(in exchange: HTTPExchange, path: Substring, context: HTTPLoopContext) {
        guard let tracing = context.tracing else { return }
        let extras = exchange.makeExtras()
        var serviceContext = tracing.extract(from: exchange.head.request.headerFields)
        if tracing.startsSpans {
            let span = tracing.startSpan(method: exchange.head.method, path: path, route: exchange.routePattern,
                                         scheme: context.scheme, context: serviceContext)
            extras.span = span
            serviceContext = span.context
        }
        extras.serviceContext = serviceContext
    }

    /// The exchange's request id, to be echoed on its response unless the response carries the id field
    /// already (the codec tells: the HTTP/1 encoder in the pass that writes the fields); nil when the
    /// server echoes none.
    static func echoedRequestID(on stream: some HTTPStream) -> HTTPEchoedRequestID? {
        guard let field = stream.context.echoedRequestIDField, let exchange = stream.exchange else { return nil }
        return HTTPEchoedRequestID(field: field, head: exchange.head.storage)
    }

    /// The exchange's request id, nil when there is no exchange (a refusal before any head).
    static func requestID(on stream: some HTTPStream) -> String? {
        stream.exchange?.requestID
    }

    /// One access line, `METHOD TARGET STATUS`, at `info`: built by appending (no interpolation of the
    /// HTTP types' descriptions) and with its source given (swift-log would otherwise work it out of
    /// `#fileID` on every call).
    /// The exchange's head is read in place, once the line is known to be wanted.
    static func logAccess(status: Int, on stream: some HTTPStream) {
        let context = stream.context
        guard context.logsAccessLines, stream.exchange != nil else { return }
        if let sink = context.accessLogSink {
            writeAccessLine(method: stream.exchange!.head.method.rawValue, target: stream.exchange!.head.target, status: status, to: sink)
            return
        }
        let line = accessLine(method: stream.exchange!.head.method.rawValue, target: stream.exchange!.head.target, status: status)
        context.logger.log(level: .info, Logger.Message(stringLiteral: line), source: "LoopKitHTTP")
    }

    /// Writes `METHOD TARGET STATUS` on the stack and lends it to `sink`: no string, no log event.
    static func writeAccessLine(method: String, target: String, status: Int, to sink: any HTTPAccessLogSink) {
        guard status >= 100 && status <= 999 else {
            var line = method + " " + target + " " + String(status)
            return line.withUTF8 { sink.appendAccessLine(UnsafeRawBufferPointer($0)) }
        }
        var method = method, target = target
        method.withUTF8 { method in
            target.withUTF8 { target in
                let length = method.count + target.count + 5
                withUnsafeTemporaryAllocation(byteCount: length, alignment: 1) { line in
                    let base = line.baseAddress!
                    UnsafeMutableRawBufferPointer(rebasing: line[..<method.count]).copyMemory(from: UnsafeRawBufferPointer(method))
                    base.storeBytes(of: UInt8(ascii: " "), toByteOffset: method.count, as: UInt8.self)
                    UnsafeMutableRawBufferPointer(rebasing: line[(method.count + 1)..<(length - 4)]).copyMemory(from: UnsafeRawBufferPointer(target))
                    base.storeBytes(of: UInt8(ascii: " "), toByteOffset: length - 4, as: UInt8.self)
                    base.storeBytes(of: UInt8(ascii: "0") + UInt8(status / 100), toByteOffset: length - 3, as: UInt8.self)
                    base.storeBytes(of: UInt8(ascii: "0") + UInt8(status / 10 % 10), toByteOffset: length - 2, as: UInt8.self)
                    base.storeBytes(of: UInt8(ascii: "0") + UInt8(status % 10), toByteOffset: length - 1, as: UInt8.self)
                    sink.appendAccessLine(UnsafeRawBufferPointer(line))
                }
            }
        }
    }

    /// `METHOD TARGET STATUS`, written into the string's storage in one pass: four appends and the
    /// status's description cost about a thousand instructions a request.
    static func accessLine(method: String, target: String, status: Int) -> String {
        guard status >= 100 && status <= 999 else { return method + " " + target + " " + String(status) }
        var method = method, target = target
        return method.withUTF8 { method in
            target.withUTF8 { target in
                let length = method.count + target.count + 5
                return String(unsafeUninitializedCapacity: length) { line in
                    _ = line.initialize(fromContentsOf: method)
                    line[method.count] = UInt8(ascii: " ")
                    _ = UnsafeMutableBufferPointer(rebasing: line[(method.count + 1)...]).initialize(fromContentsOf: target)
                    line[length - 4] = UInt8(ascii: " ")
                    line[length - 3] = UInt8(ascii: "0") + UInt8(status / 100)
                    line[length - 2] = UInt8(ascii: "0") + UInt8(status / 10 % 10)
                    line[length - 1] = UInt8(ascii: "0") + UInt8(status % 10)
                    return length
                }
            }
        }
    }

    /// The codec answered a request itself (a parser error, a body over its limit, a slow head or body),
    /// with `bodyBytes` of body, and closes: the access line, and, when the head had arrived, the
    /// middleware's `responseEnded` (through the chain the request went down, or, refused before any
    /// chain ran, the router's) and the exchange's end. Loop thread.
    static func refused(_ status: HTTPResponse.Status, bodyBytes: Int, on stream: some HTTPStream) {
        let context = stream.context
        guard stream.exchange != nil else {
            if context.logsAccessLines {
                var line = "- - " + String(status.code)
                if let sink = context.accessLogSink {
                    line.withUTF8 { sink.appendAccessLine(UnsafeRawBufferPointer($0)) }
                } else {
                    context.logger.log(level: .info, Logger.Message(stringLiteral: line), source: "LoopKitHTTP")
                }
            }
            return
        }
        logAccess(status: status.code, on: stream)
        stream.exchange!.responseStarted = true  // a handler still running answers no more
        stream.exchange!.responseStatus = status
        stream.responseBodyBytes = bodyBytes
        if !stream.exchange!.hasMiddlewareTrail {
            // Refused before the chain ran: its `responseEnded` hooks (an access log, metrics) see it.
            let exchange = stream.exchange!
            let request = HTTPServerRequest.of(exchange, body: [], parameters: exchange.parameters, server: context)
            let summary = HTTPResponseSummary(status: status, bodyBytes: bodyBytes, startTime: exchange.startTime,
                                              endTime: .now, isComplete: true)
            context.router.middleware.responseEnded(summary, for: request, reached: .max)
        }
        exchangeEnded(on: stream, isComplete: true)
    }

    /// The upgrade was accepted (by the route, or by the middleware's `101`): the `101` goes out with the
    /// request id, the request is logged and its exchange ends, and the codec hands the connection to the
    /// new protocol. Nothing happens when the client has gone. Loop thread.
    static func upgradeAccepted<Upgrader: HTTPUpgrader>(_ request: HTTPServerRequest, upgrader: Upgrader,
                                                        acceptance: Upgrader.Acceptance, fields: HTTPFields, on stream: some HTTPStream) {
        guard !stream.isClosed else { return }
        var fields = fields
        if let field = stream.context.configuration.requestIDField, let id = requestID(on: stream), fields[field] == nil {
            fields[field] = id
        }
        guard stream.writeSwitchingProtocols(upgrader.switchingProtocols(acceptance, fields: fields)) else { return }
        if stream.exchange != nil {
            logAccess(status: 101, on: stream)
            stream.exchange!.responseStatus = .switchingProtocols
        }
        exchangeEnded(on: stream, isComplete: true)  // the request is over; the socket lives on
        stream.handOver(to: upgrader, acceptance: acceptance, request: request)
    }

    /// The exchange's response has ended (or its stream closed first, `isComplete` false): its span ends
    /// with the status, the middleware it reached are told, and it is forgotten (its extras kept for the
    /// stream's next request). Loop thread.
    static func exchangeEnded(on stream: some HTTPStream, isComplete: Bool) {
        guard let exchange = stream.exchange.take() else { return }
        let bodyBytes = stream.responseBodyBytes
        stream.responseBodyBytes = 0
        stream.spareExchange = exchange  // begun again at the stream's next head, not before this returns
        guard let extras = exchange.extras else { return }
        let status = exchange.responseStatus
        if let span = extras.span {
            if let status { HTTPTracing.record(status: status.code, on: span) }
            span.end()
        }
        let trail = exchange.takeMiddlewareTrail()
        extras.reset()
        guard let trail else { return }
        let summary = HTTPResponseSummary(status: status, bodyBytes: bodyBytes, startTime: exchange.startTime,
                                          endTime: .now, isComplete: isComplete)
        trail.chain.responseEnded(summary, for: trail.request, reached: trail.reached)
    }
}
