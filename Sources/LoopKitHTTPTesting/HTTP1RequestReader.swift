/// The HTTP/1.1 requests an ``HTTPTestClient`` writes, read back as they are written (split anywhere), so
/// that an HTTP/2 transport can carry each as a stream: its head, then its body as it comes (a length, or
/// chunks de-chunked), then its end. Pipelined requests come out one after the other.
struct HTTP1RequestReader {
    /// What the written bytes said, in order.
    enum Event: Equatable {
        /// A request head: the method, the request target and the fields in order.
        case head(method: String, target: String, fields: [Field])
        /// Bytes of the current request's body.
        case body([UInt8])
        /// The current request's body (or the request, when it has none) ended.
        case end
    }

    struct Field: Equatable {
        var name: String
        var value: String
    }

    private enum State {
        case head
        case length(remaining: Int)
        /// Chunks: `remaining` bytes of the current chunk (nil: a size line is next), then its CRLF when
        /// `awaitingCRLF`; `inTrailers` after the last chunk (the trailers are read and dropped).
        case chunked(remaining: Int?, awaitingCRLF: Bool, inTrailers: Bool)
    }

    private var pending: [UInt8] = []
    private var state = State.head

    /// Reads `bytes`, after what came before.
    ///
    /// - Throws: ``HTTPTestClientError/notTranslatable(_:)`` when they are not HTTP/1.1 requests.
    mutating func feed(_ bytes: [UInt8]) throws(HTTPTestClientError) -> [Event] {
        pending += bytes
        var events: [Event] = []
        var cursor = 0
        defer { pending.removeFirst(cursor) }
        while cursor < pending.count || isBodyless {
            switch state {
            case .head:
                guard let end = HTTPTestResponse.find([13, 10, 13, 10], in: pending, from: cursor) else { return events }
                let (head, framing) = try Self.parseHead(pending[cursor..<end])
                cursor = end + 4
                events.append(head)
                switch framing {
                case .none: events.append(.end)
                case .length(let count): state = .length(remaining: count)
                case .chunked: state = .chunked(remaining: nil, awaitingCRLF: false, inTrailers: false)
                }
            case .length(let remaining):
                let taken = min(remaining, pending.count - cursor)
                if taken > 0 { events.append(.body(Array(pending[cursor..<(cursor + taken)]))) }
                cursor += taken
                if taken == remaining {
                    events.append(.end)
                    state = .head
                } else {
                    state = .length(remaining: remaining - taken)
                }
            case .chunked(let remaining, let awaitingCRLF, let inTrailers):
                if inTrailers {
                    guard let end = HTTPTestResponse.find([13, 10], in: pending, from: cursor) else { return events }
                    let empty = end == cursor
                    cursor = end + 2
                    if empty {
                        events.append(.end)
                        state = .head
                    }
                } else if let left = remaining, left > 0 {
                    let taken = min(left, pending.count - cursor)
                    events.append(.body(Array(pending[cursor..<(cursor + taken)])))
                    cursor += taken
                    state = .chunked(remaining: left - taken, awaitingCRLF: true, inTrailers: false)
                } else if awaitingCRLF {
                    guard pending.count - cursor >= 2 else { return events }
                    guard pending[cursor] == 13, pending[cursor + 1] == 10 else { throw .notTranslatable("no CRLF after a chunk") }
                    cursor += 2
                    state = .chunked(remaining: nil, awaitingCRLF: false, inTrailers: false)
                } else {
                    guard let lineEnd = HTTPTestResponse.find([13, 10], in: pending, from: cursor) else { return events }
                    let line = String(decoding: pending[cursor..<lineEnd], as: UTF8.self)
                    let sizeText = line.split(separator: ";").first.map { $0.filter { $0 != " " } } ?? ""
                    guard let size = Int(sizeText, radix: 16), size >= 0 else {
                        throw .notTranslatable("chunk size \(String(reflecting: line))")
                    }
                    cursor = lineEnd + 2
                    state = .chunked(remaining: size == 0 ? nil : size, awaitingCRLF: size != 0, inTrailers: size == 0)
                }
            }
        }
        return events
    }

    /// Forgets the rest of the current request's body (the server reset its stream): the next bytes
    /// written start a new request.
    mutating func abandonBody() {
        state = .head
    }

    /// A zero-length body ends without bytes.
    private var isBodyless: Bool {
        if case .length(remaining: 0) = state { return true }
        return false
    }

    private enum Framing {
        case none, length(Int), chunked
    }

    private static func parseHead(_ bytes: ArraySlice<UInt8>) throws(HTTPTestClientError) -> (Event, Framing) {
        let lines = String(decoding: bytes, as: UTF8.self).split(separator: "\r\n", omittingEmptySubsequences: false).map(String.init)
        let parts = lines[0].split(separator: " ", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[2] == "HTTP/1.1" || parts[2] == "HTTP/1.0", !parts[0].isEmpty, !parts[1].isEmpty else {
            throw .notTranslatable("request line \(String(reflecting: lines[0]))")
        }
        var fields: [Field] = []
        var framing = Framing.none
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":"), colon != line.startIndex else {
                throw .notTranslatable("field line \(String(reflecting: line))")
            }
            let name = String(line[..<colon])
            let value = String(line[line.index(after: colon)...].drop { $0 == " " || $0 == "\t" })
            switch name.lowercased() {
            case "transfer-encoding" where value.lowercased().contains("chunked"):
                framing = .chunked
            case "content-length":
                guard let count = Int(value), count >= 0 else { throw .notTranslatable("Content-Length \(value)") }
                if case .none = framing { framing = .length(count) }
            default:
                break
            }
            fields.append(Field(name: name, value: value))
        }
        return (.head(method: String(parts[0]), target: String(parts[1]), fields: fields), framing)
    }
}
