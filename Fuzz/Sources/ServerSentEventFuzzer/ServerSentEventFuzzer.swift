import FuzzSupport
import LoopKitHTTP

/// The server-sent event encoder: an event that encodes decodes, by the HTML standard's event-stream
/// algorithm, to the same type, data (its line breaks as LF), id and reconnection time; an event that
/// cannot be written is the typed error that names the field, and nothing else is.
///
/// Input: byte 0 says which fields are set (bit 0 event, bit 1 id, bit 2 retry); then, with a retry, 16
/// bytes of seconds and attoseconds; the rest is event, id and data separated by 0xFF (decoded as UTF-8
/// with repair). A comment line before the event must not change what a client sees.
@_cdecl("LLVMFuzzerTestOneInput")
public func serverSentEventFuzzer(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard size >= 1, let data else { return 0 }
    let flags = data[0]
    var rest = UnsafeRawBufferPointer(start: data + 1, count: size - 1)
    var retry: Duration?
    if flags & 4 != 0 {
        guard rest.count >= 16 else { return 0 }
        let seconds = rest.loadUnaligned(fromByteOffset: 0, as: Int64.self)
        let attoseconds = rest.loadUnaligned(fromByteOffset: 8, as: Int64.self)
        retry = Duration(secondsComponent: seconds, attosecondsComponent: attoseconds)
        rest = UnsafeRawBufferPointer(rebasing: rest[16...])
    }
    let parts = rest.split(separator: 0xFF, maxSplits: 2, omittingEmptySubsequences: false)
        .map { String(decoding: $0, as: UTF8.self) }
    let part = { (index: Int) in index < parts.count ? parts[index] : "" }
    let event = ServerSentEvent(event: flags & 1 != 0 ? part(0) : nil, id: flags & 2 != 0 ? part(1) : nil,
                                data: part(2), retry: retry)

    let encoded: [UInt8]
    do throws(ServerSentEventError) {
        encoded = Array(try event.encoded())
    } catch {
        guard case .lineBreak(let field, let value) = error else { return 0 }
        if let type = event.event, type.utf8.contains(where: breaksLine) {
            fuzzCheck(field == "event" && value == type, "event \(String(reflecting: type)) refused as \(error)")
        } else {
            let id = event.id ?? ""
            fuzzCheck(field == "id" && value == id && id.utf8.contains(where: { breaksLine($0) || $0 == 0 }),
                      "\(event) refused as \(error)")
        }
        return 0
    }
    fuzzCheck(!(event.event ?? "").utf8.contains(where: breaksLine), "an event type with a line break encoded")
    fuzzCheck(!(event.id ?? "").utf8.contains(where: { breaksLine($0) || $0 == 0 }), "an id with a line break or NUL encoded")

    let decoded = EventStreamDecoder.decode(encoded)
    fuzzCheck(decoded.count == 1, "\(event) decoded to \(decoded.count) events: \(decoded)")
    let expected = DecodedEvent(
        type: (event.event ?? "").isEmpty ? "message" : event.event!,
        data: normalizedLineBreaks(Array(event.data.utf8)),
        id: event.id.map { Array($0.utf8) },
        retry: retry.map(expectedMilliseconds)
    )
    fuzzCheck(decoded.first == expected, "\(event) decoded to \(decoded), expected \(expected)")

    let comment = Array(ServerSentEvent.comment(part(0) + part(2)))
    fuzzCheck(comment.filter(breaksLine) == [UInt8(ascii: "\n")] && comment.last == UInt8(ascii: "\n"),
              "a comment with more than its final line break")
    fuzzCheck(EventStreamDecoder.decode(comment + encoded) == decoded, "a comment changed the events")
    return 0
}

func breaksLine(_ byte: UInt8) -> Bool { byte == UInt8(ascii: "\n") || byte == UInt8(ascii: "\r") }

/// CRLF and CR as LF, as a client's decoder sees a payload's lines.
func normalizedLineBreaks(_ bytes: [UInt8]) -> [UInt8] {
    var output: [UInt8] = []
    var index = 0
    while index < bytes.count {
        if bytes[index] == UInt8(ascii: "\r") {
            output.append(UInt8(ascii: "\n"))
            if index + 1 < bytes.count && bytes[index + 1] == UInt8(ascii: "\n") { index += 1 }
        } else {
            output.append(bytes[index])
        }
        index += 1
    }
    return output
}

/// The decimal milliseconds a client reads from `retry:`: whole milliseconds toward zero, at least 0.
func expectedMilliseconds(_ duration: Duration) -> [UInt8] {
    let milliseconds = duration.attoseconds / 1_000_000_000_000_000
    return Array(String(max(0, milliseconds)).utf8)
}

/// One dispatched event as a browser sees it.
struct DecodedEvent: Equatable {
    var type: String
    var data: [UInt8]
    /// The last event id buffer, when the event set it.
    var id: [UInt8]?
    /// The reconnection time's digits, when the event set it.
    var retry: [UInt8]?
}

/// The HTML standard's event-stream interpretation (§9.2.6), over bytes.
enum EventStreamDecoder {
    static func decode(_ stream: [UInt8]) -> [DecodedEvent] {
        var events: [DecodedEvent] = []
        var type: [UInt8] = []
        var data: [UInt8] = []
        var id: [UInt8]?
        var retry: [UInt8]?
        for line in lines(stream) {
            if line.isEmpty {
                if !data.isEmpty {
                    data.removeLast()
                    events.append(DecodedEvent(type: type.isEmpty ? "message" : String(decoding: type, as: UTF8.self),
                                               data: data, id: id, retry: retry))
                }
                type = []
                data = []
                continue
            }
            if line.first == UInt8(ascii: ":") { continue }
            var name = line[...]
            var value: ArraySlice<UInt8> = []
            if let colon = line.firstIndex(of: UInt8(ascii: ":")) {
                name = line[..<colon]
                value = line[(colon + 1)...]
                if value.first == UInt8(ascii: " ") { value = value.dropFirst() }
            }
            switch String(decoding: name, as: UTF8.self) {
            case "event": type = Array(value)
            case "data": data += value + [UInt8(ascii: "\n")]
            case "id": if !value.contains(0) { id = Array(value) }
            case "retry": if !value.isEmpty && value.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) { retry = Array(value) }
            default: break
            }
        }
        return events
    }

    /// Lines ended by CRLF, LF or CR; an unterminated last line is dropped, as a stream's last partial line is.
    static func lines(_ stream: [UInt8]) -> [[UInt8]] {
        var lines: [[UInt8]] = []
        var current: [UInt8] = []
        var index = 0
        while index < stream.count {
            let byte = stream[index]
            if breaksLine(byte) {
                lines.append(current)
                current = []
                if byte == UInt8(ascii: "\r") && index + 1 < stream.count && stream[index + 1] == UInt8(ascii: "\n") { index += 1 }
            } else {
                current.append(byte)
            }
            index += 1
        }
        return lines
    }
}
