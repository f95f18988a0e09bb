import HTTPTypes
import Logging
import LoopKit
import Tracing
@testable import LoopKitHTTP

/// A log handler that records every event (level, message, metadata merged with the logger's).
struct RecordingLogHandler: LogHandler {
    struct Record: Sendable {
        var level: Logger.Level
        var message: String
        var metadata: Logger.Metadata
    }

    let records: Recorder<Record>
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        records.record(Record(level: event.level, message: event.message.description,
                              metadata: metadata.merging(event.metadata ?? [:]) { $1 }))
    }
}

/// A logger whose events go to `records`.
func recordingLogger(_ records: Recorder<RecordingLogHandler.Record>) -> Logger {
    Logger(label: "loopkit.http.test") { _ in RecordingLogHandler(records: records) }
}

/// W3C trace context as the test tracer carries it.
struct TestTrace: Sendable, Equatable {
    var traceID: String
    var spanID: String
    var state: String?
}

enum TestTraceKey: ServiceContextKey {
    typealias Value = TestTrace
}

/// A span that records what the server does with it.
final class TestSpan: Span {
    let kind: SpanKind
    let parent: TestTrace?
    let context: ServiceContext
    private let state: Lock<(name: String, attributes: SpanAttributes, status: SpanStatus?, ended: Bool)>
    private let tracer: TestTracer

    init(name: String, kind: SpanKind, parent: TestTrace?, context: ServiceContext, tracer: TestTracer) {
        self.kind = kind
        self.parent = parent
        self.context = context
        self.tracer = tracer
        state = Lock((name, [:], nil, false))
    }

    var operationName: String {
        get { state.withLock { $0.name } }
        set { state.withLock { $0.name = newValue } }
    }
    var attributes: SpanAttributes {
        get { state.withLock { $0.attributes } }
        set { state.withLock { $0.attributes = newValue } }
    }
    var status: SpanStatus? { state.withLock { $0.status } }
    var isEnded: Bool { state.withLock { $0.ended } }
    var isRecording: Bool { !isEnded }
    var trace: TestTrace { context[TestTraceKey.self]! }

    func setStatus(_ status: SpanStatus) { state.withLock { $0.status = status } }
    func addEvent(_ event: SpanEvent) {}
    func recordError<Instant: TracerInstant>(_ error: any Error, attributes: SpanAttributes, at instant: @autoclosure () -> Instant) {}
    func addLink(_ link: SpanLink) {}
    func end<Instant: TracerInstant>(at instant: @autoclosure () -> Instant) {
        state.withLock { $0.ended = true }
        tracer.ended.record(self)
    }
}

/// A tracer that speaks W3C `traceparent`/`tracestate` and records the spans it ends; injected through
/// ``HTTPServer/Configuration/tracer`` so that tests never touch the process-wide `InstrumentationSystem`.
final class TestTracer: Tracer {
    let ended = Recorder<TestSpan>()
    private let counter = Lock<Int>(0)

    private func nextID(length: Int) -> String {
        let n = counter.withLock { value in
            value += 1
            return value
        }
        let hex = String(n, radix: 16)
        return String(repeating: "0", count: length - hex.count) + hex
    }

    func startSpan<Instant: TracerInstant>(_ operationName: String, context: @autoclosure () -> ServiceContext, ofKind kind: SpanKind,
                                           at instant: @autoclosure () -> Instant, function: String, file fileID: String,
                                           line: UInt) -> TestSpan {
        var context = context()
        let parent = context[TestTraceKey.self]
        context[TestTraceKey.self] = TestTrace(traceID: parent?.traceID ?? nextID(length: 32), spanID: nextID(length: 16),
                                               state: parent?.state)
        return TestSpan(name: operationName, kind: kind, parent: parent, context: context, tracer: self)
    }

    func forceFlush() {}

    func extract<Carrier, Extract: Extractor>(_ carrier: Carrier, into context: inout ServiceContext, using extractor: Extract)
    where Extract.Carrier == Carrier {
        guard let parent = extractor.extract(key: "traceparent", from: carrier) else { return }
        let parts = parent.split(separator: "-")
        guard parts.count >= 4 else { return }
        context[TestTraceKey.self] = TestTrace(traceID: String(parts[1]), spanID: String(parts[2]),
                                               state: extractor.extract(key: "tracestate", from: carrier))
    }

    func inject<Carrier, Inject: Injector>(_ context: ServiceContext, into carrier: inout Carrier, using injector: Inject)
    where Inject.Carrier == Carrier {
        guard let trace = context[TestTraceKey.self] else { return }
        injector.inject("00-\(trace.traceID)-\(trace.spanID)-01", forKey: "traceparent", into: &carrier)
        if let state = trace.state { injector.inject(state, forKey: "tracestate", into: &carrier) }
    }
}

/// Writes a context into response fields.
struct HTTPFieldsInjector: Injector {
    func inject(_ value: String, forKey key: String, into carrier: inout HTTPFields) {
        carrier[HTTPField.Name(key)!] = value
    }
}
