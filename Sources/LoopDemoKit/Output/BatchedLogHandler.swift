import Logging
import LoopKitHTTP
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A swift-log handler that writes to standard error in batches: each line is formatted on the calling
/// thread into one shared buffer, and a writer thread sends the buffer with one `write` every few
/// milliseconds (or as soon as it passes 64 KiB), so logging a line costs a format and an append, not a
/// system call and a flush. `StreamLogHandler` writes and flushes each line: one access line per request
/// then costs a third of a server's throughput.
///
/// Lines keep their order. ``flush()`` writes what is buffered (call it before the process exits; a
/// crash loses at most the last interval's lines).
///
/// Safe from any thread.
public struct BatchedLogHandler: LogHandler {
    /// The buffer and the thread that writes it, shared by every handler the factory makes.
    public final class Sink: Sendable {
        /// The lines not yet written (`count` bytes in room for `capacity`, grown by doubling), and the
        /// current second's formatted timestamp. Appends are `memcpy`s: an array's `append(contentsOf:)`
        /// cost about a hundred instructions each, four a line.
        private struct Pending: ~Copyable, @unchecked Sendable {  // owns its bytes alone, used only under the sink's lock (the lock's region check needs it Sendable)
            var bytes: UnsafeMutableRawPointer
            var count = 0
            var capacity: Int
            var second = -1
            var stamp: [UInt8] = []

            init(capacity: Int) {
                self.capacity = capacity
                bytes = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 1)
            }

            deinit {
                bytes.deallocate()
            }

            /// Appends `part`, growing the room when it does not fit.
            mutating func append(_ part: UnsafeRawBufferPointer) {
                guard let source = part.baseAddress, part.count > 0 else { return }
                if count + part.count > capacity {
                    let grown = Swift.max(capacity * 2, count + part.count)
                    let moved = UnsafeMutableRawPointer.allocate(byteCount: grown, alignment: 1)
                    moved.copyMemory(from: bytes, byteCount: count)
                    bytes.deallocate()
                    bytes = moved
                    capacity = grown
                }
                (bytes + count).copyMemory(from: source, byteCount: part.count)
                count += part.count
            }

            mutating func append(_ byte: UInt8) {
                withUnsafeBytes(of: byte) { append($0) }
            }

            mutating func append(_ literal: StaticString) {
                append(UnsafeRawBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount))
            }

            mutating func append(_ array: [UInt8]) {
                array.withUnsafeBytes { append($0) }
            }

            /// Formats the timestamp when the second has changed.
            mutating func appendStamp(_ now: Int) {
                if now != second {
                    var time = now
                    var parts = tm()
                    gmtime_r(&time, &parts)
                    var formatted = [CChar](repeating: 0, count: 32)
                    let length = strftime(&formatted, formatted.count, "%Y-%m-%dT%H:%M:%SZ", &parts)
                    stamp = formatted[..<length].map { UInt8(bitPattern: $0) }
                    second = now
                }
                append(stamp)
            }
        }

        private let buffer = Mutex(Pending(capacity: 64 * 1024))
        private let fd: Int32
        private let interval: Duration

        /// A sink writing to `fd` every `interval`.
        public init(fd: Int32 = 2, interval: Duration = .milliseconds(20)) {
            self.fd = fd
            self.interval = interval
            Thread.start { [self] in run() }
        }

        /// Appends one line: `TIMESTAMP LEVEL LABEL: MESSAGE[ METADATA]`; writes at once when 64 KiB are
        /// buffered.
        /// `label` is given as its line prefix, ` LABEL: ` (made once per handler). The strings are copied
        /// from their contiguous storage: appending a string's UTF-8 view element by element cost a few
        /// hundred instructions a line.
        func append(level: Logger.Level, labelPrefix: [UInt8], message: String, metadata: String?) {
            var message = message
            var metadata = metadata
            message.withUTF8 { message in
                if metadata == nil {
                    append(level: level, labelPrefix: labelPrefix, bytes: UnsafeRawBufferPointer(message))
                } else {
                    metadata!.withUTF8 { append(level: level, labelPrefix: labelPrefix, bytes: UnsafeRawBufferPointer(message),
                                                metadata: UnsafeRawBufferPointer($0)) }
                }
            }
        }

        /// Appends one line of `message`'s bytes (and `metadata`'s), as
        /// ``append(level:labelPrefix:message:metadata:)`` does strings'.
        func append(level: Logger.Level, labelPrefix: [UInt8], bytes message: UnsafeRawBufferPointer,
                    metadata: UnsafeRawBufferPointer? = nil) {
            var second = timespec()
            clock_gettime(CLOCK_REALTIME, &second)
            let full = buffer.withLock { pending -> Bool in
                pending.appendStamp(second.tv_sec)
                pending.append(UInt8(ascii: " "))
                pending.append(Self.levelName(level))
                pending.append(labelPrefix)
                pending.append(message)
                if let metadata { pending.append(metadata) }
                pending.append(UInt8(ascii: "\n"))
                return pending.count >= 64 * 1024
            }
            if full { flush() }
        }

        /// The level's name as in a line (swift-log's raw values).
        private static func levelName(_ level: Logger.Level) -> StaticString {
            switch level {
            case .trace: "trace"
            case .debug: "debug"
            case .info: "info"
            case .notice: "notice"
            case .warning: "warning"
            case .error: "error"
            case .critical: "critical"
            }
        }

        /// Writes everything buffered, with one `write` (more if the descriptor takes it in parts).
        public func flush() {
            let pending = buffer.withLock { pending -> [UInt8] in
                defer { pending.count = 0 }
                return Array(UnsafeRawBufferPointer(start: pending.bytes, count: pending.count))
            }
            var offset = 0
            while offset < pending.count {
                let written = pending[offset...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
                if written <= 0 { return }  // standard error is gone: nowhere left to report it
                offset += written
            }
        }

        private func run() {
            let nanoseconds = max(1_000_000, Int(interval / .nanoseconds(1)))
            var pause = timespec(tv_sec: nanoseconds / 1_000_000_000, tv_nsec: nanoseconds % 1_000_000_000)
            while true {
                nanosleep(&pause, nil)
                flush()
            }
        }
    }

    public var logLevel: Logger.Level = .info
    public var metadata: Logger.Metadata = [:]
    /// ` LABEL: `, the part of each line after the level.
    private let labelPrefix: [UInt8]
    private let sink: Sink

    /// A handler for `label` writing through `sink`.
    public init(label: String, sink: Sink) {
        labelPrefix = Array(" \(label): ".utf8)
        self.sink = sink
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        let merged = event.metadata.map { metadata.merging($0) { $1 } } ?? metadata
        let text = merged.isEmpty ? nil : merged.sorted { $0.key < $1.key }.map { " \($0.key)=\($0.value)" }.joined()
        sink.append(level: event.level, labelPrefix: labelPrefix, message: event.message.description, metadata: text)
    }
}

extension BatchedLogHandler {
    /// A server's access log written straight into a sink's buffer (``HTTPAccessLogSink``): the line a
    /// `Logger` of `label` would make at `info` (`TIMESTAMP info LABEL: GET /hello 200`), without the
    /// log event and message string swift-log makes for each. Safe from any thread (the sink's lock): every
    /// loop of a server appends through it at once.
    public final class AccessLines: HTTPAccessLogSink {
        private let labelPrefix: [UInt8]
        private let sink: Sink

        /// Access lines of `label`, through `sink`.
        public init(label: String, sink: Sink) {
            labelPrefix = Array(" \(label): ".utf8)
            self.sink = sink
        }

        public func appendAccessLine(_ line: UnsafeRawBufferPointer) {
            sink.append(level: .info, labelPrefix: labelPrefix, bytes: line)
        }
    }
}

/// A detached thread running `body` (the sink's writer).
private enum Thread {
    static func start(_ body: @escaping @Sendable () -> Void) {
        final class Box: Sendable {  // carries the closure through pthread's void pointer, once
            let body: @Sendable () -> Void
            init(_ body: @escaping @Sendable () -> Void) { self.body = body }
        }
        var thread = pthread_t()
        let box = Unmanaged.passRetained(Box(body)).toOpaque()
        let created = pthread_create(&thread, nil, { context in
            let box = Unmanaged<Box>.fromOpaque(context!).takeRetainedValue()
            box.body()
            return nil
        }, box)
        if created == 0 {
            pthread_detach(thread)
        } else {
            Unmanaged<Box>.fromOpaque(box).release()
        }
    }
}
