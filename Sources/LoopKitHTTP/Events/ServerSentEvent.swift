import LoopKitNet

/// One event of a `text/event-stream` response (the HTML standard's server-sent events).
///
/// ```swift
/// try await events.send(ServerSentEvent(event: "progress", id: "42", data: #"{"done":420}"#))
/// ```
///
/// A value: safe from any thread.
public struct ServerSentEvent: Sendable, Hashable {
    /// The event's type (`event:`); nil for the default type, `message`. No line breaks.
    public var event: String?
    /// The event's id (`id:`), which the browser sends back as `Last-Event-ID` when it reconnects. No line
    /// breaks and no NUL.
    public var id: String?
    /// The payload; each of its lines becomes one `data:` line (`\n`, `\r\n` and `\r` all break lines).
    public var data: String
    /// How long a client waits before reconnecting (`retry:`), if set. Whole milliseconds.
    public var retry: Duration?

    /// An event with this payload and, optionally, a type, an id and a reconnection time.
    ///
    /// - Parameters:
    ///   - event: The event's type; nil for `message`.
    ///   - id: The event's id.
    ///   - data: The payload.
    ///   - retry: The client's reconnection time.
    public init(event: String? = nil, id: String? = nil, data: String, retry: Duration? = nil) {
        self.event = event
        self.id = id
        self.data = data
        self.retry = retry
    }

    /// The event as it goes on the wire, ending with the blank line that dispatches it.
    ///
    /// - Throws: ``ServerSentEventError`` when ``event`` or ``id`` holds a line break (or ``id`` a NUL):
    ///   written as is, it would end the field early and inject another.
    public func encoded() throws(ServerSentEventError) -> Bytes {
        Bytes(try encodedArray())
    }

    /// ``encoded()`` as an array, for the writers that copy it into the connection's output at once.
    func encodedArray() throws(ServerSentEventError) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(data.utf8.count + 32)
        if let event {
            guard !event.utf8.contains(where: Self.breaksLine) else { throw .lineBreak(field: "event", value: event) }
            Self.append(field: "event", value: event.utf8, to: &bytes)
        }
        if let id {
            guard !id.utf8.contains(where: { Self.breaksLine($0) || $0 == 0 }) else { throw .lineBreak(field: "id", value: id) }
            Self.append(field: "id", value: id.utf8, to: &bytes)
        }
        if let retry {
            // From the 128-bit attosecond count: a Duration holds more milliseconds than Int does, and more
            // seconds than `components` can return without trapping. Whole milliseconds toward zero, a
            // negative time as 0.
            let milliseconds = max(0, retry.attoseconds / 1_000_000_000_000_000)
            Self.append(field: "retry", value: String(milliseconds).utf8, to: &bytes)
        }
        // Every line of the payload, CR, LF and CRLF alike, as its own data: line (an empty payload is one
        // empty data: line, which still dispatches an event with empty data).
        let payload = Array(data.utf8)
        var start = 0
        var index = 0
        while index < payload.count {
            let byte = payload[index]
            if Self.breaksLine(byte) {
                Self.append(field: "data", value: payload[start..<index], to: &bytes)
                if byte == UInt8(ascii: "\r"), index + 1 < payload.count, payload[index + 1] == UInt8(ascii: "\n") { index += 1 }
                start = index + 1
            }
            index += 1
        }
        Self.append(field: "data", value: payload[start...], to: &bytes)
        bytes.append(UInt8(ascii: "\n"))
        return bytes
    }

    /// A comment line (`: text`), which clients ignore: a keep-alive that proxies and clients see as traffic.
    ///
    /// - Parameter text: The comment; line breaks in it are replaced by spaces.
    /// - Returns: The comment's bytes, ending with a line break.
    public static func comment(_ text: String) -> Bytes {
        Bytes(commentArray(text))
    }

    /// ``comment(_:)`` as an array, for the writers that copy it into the connection's output at once.
    static func commentArray(_ text: String) -> [UInt8] {
        [UInt8(ascii: ":"), UInt8(ascii: " ")] + text.utf8.map { breaksLine($0) ? UInt8(ascii: " ") : $0 } + [UInt8(ascii: "\n")]
    }

    private static func breaksLine(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: "\n") || byte == UInt8(ascii: "\r")
    }

    private static func append<Value: Sequence<UInt8>>(field: StaticString, value: Value, to bytes: inout [UInt8]) {
        bytes.append(contentsOf: UnsafeRawBufferPointer(start: field.utf8Start, count: field.utf8CodeUnitCount))
        bytes.append(UInt8(ascii: ":"))
        bytes.append(UInt8(ascii: " "))
        bytes.append(contentsOf: value)
        bytes.append(UInt8(ascii: "\n"))
    }
}

/// Why a ``ServerSentEvent`` cannot be written.
public enum ServerSentEventError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The field holds a line break (or, for `id`, a NUL), which would end it early and inject another field.
    case lineBreak(field: String, value: String)

    public var description: String {
        switch self {
        case .lineBreak(let field, let value):
            "server-sent event field \(field) must not contain a line break\(field == "id" ? " or NUL" : ""): \(String(reflecting: value))"
        }
    }
}
