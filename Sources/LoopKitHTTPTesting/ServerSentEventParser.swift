import LoopKitHTTP

/// Reads a `text/event-stream` as a browser's `EventSource` does (the HTML standard, §9.2.6 "Parsing an
/// event stream"), fed bytes as they arrive, split anywhere:
///
/// - a UTF-8 byte order mark at the very start is skipped; lines end with CRLF, LF or CR (a CR at the end
///   of what has arrived waits to see whether an LF follows);
/// - a line that starts with `:` is a comment, ignored; `name: value` sets a field (one space after the
///   colon is dropped), a line without a colon is a field with an empty value;
/// - `data` lines are joined with `\n`; `event` sets the type (nil for `message`); `id` sets the last event
///   id, which stays for the events that follow until another `id` line changes it (an empty one clears
///   it; one holding a NUL is ignored); `retry` of ASCII digits only sets the reconnection time in
///   milliseconds, given with the next event dispatched; any other field is ignored;
/// - a blank line dispatches the event when it has data (a block without `data` dispatches nothing); what
///   is left without a blank line at the end of the stream is discarded.
///
/// Not thread-safe: a value used by one reader.
struct ServerSentEventParser {
    private var line: [UInt8] = []
    private var atStart = true
    private var skippedBOMBytes = 0
    private var afterCR = false
    private var data: [UInt8] = []
    private var hasData = false
    private var eventType: String?
    private var lastEventID: String?
    private var retry: Duration?
    /// Events dispatched and not yet taken.
    private(set) var events: [ServerSentEvent] = []

    /// Parses `bytes`, which follow what was fed before.
    mutating func feed(_ bytes: some Sequence<UInt8>) {
        for byte in bytes {
            if atStart {  // EF BB BF, once, at the start of the stream
                let bom: [UInt8] = [0xEF, 0xBB, 0xBF]
                if byte == bom[skippedBOMBytes] {
                    skippedBOMBytes += 1
                    if skippedBOMBytes == bom.count { atStart = false }
                    continue
                }
                atStart = false
                line.append(contentsOf: bom[..<skippedBOMBytes])  // not a BOM after all: those were the line's
            }
            if afterCR {
                afterCR = false
                if byte == UInt8(ascii: "\n") { continue }  // the LF of a CRLF
            }
            switch byte {
            case UInt8(ascii: "\r"):
                afterCR = true
                endLine()
            case UInt8(ascii: "\n"):
                endLine()
            default:
                line.append(byte)
            }
        }
    }

    /// Takes the events dispatched so far, oldest first.
    mutating func takeEvents() -> [ServerSentEvent] {
        defer { events.removeAll() }
        return events
    }

    /// Takes the oldest event dispatched and not yet taken.
    mutating func nextEvent() -> ServerSentEvent? {
        events.isEmpty ? nil : events.removeFirst()
    }

    /// The events of a whole stream (what is left without a blank line at its end is discarded).
    static func events(in bytes: some Sequence<UInt8>) -> [ServerSentEvent] {
        var parser = ServerSentEventParser()
        parser.feed(bytes)
        return parser.takeEvents()
    }

    private mutating func endLine() {
        atStart = false
        defer { line.removeAll(keepingCapacity: true) }
        guard !line.isEmpty else {
            dispatch()
            return
        }
        if line[0] == UInt8(ascii: ":") { return }  // a comment
        let name: String
        var value: ArraySlice<UInt8>
        if let colon = line.firstIndex(of: UInt8(ascii: ":")) {
            name = String(decoding: line[..<colon], as: UTF8.self)
            value = line[(colon + 1)...]
            if value.first == UInt8(ascii: " ") { value = value.dropFirst() }
        } else {
            name = String(decoding: line, as: UTF8.self)
            value = []
        }
        switch name {
        case "event":
            eventType = String(decoding: value, as: UTF8.self)
        case "data":
            if hasData { data.append(UInt8(ascii: "\n")) }
            data.append(contentsOf: value)
            hasData = true
        case "id":
            if !value.contains(0) { lastEventID = value.isEmpty ? nil : String(decoding: value, as: UTF8.self) }
        case "retry":
            if !value.isEmpty, value.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }),
               let milliseconds = Int64(String(decoding: value, as: UTF8.self)) {
                retry = .milliseconds(milliseconds)
            }
        default:
            break  // ignored, as the standard says
        }
    }

    private mutating func dispatch() {
        defer {
            data.removeAll(keepingCapacity: true)
            hasData = false
            eventType = nil
        }
        guard hasData else { return }
        let type = eventType.flatMap { $0.isEmpty ? nil : $0 }
        events.append(ServerSentEvent(event: type, id: lastEventID, data: String(decoding: data, as: UTF8.self), retry: retry))
        retry = nil
    }
}
