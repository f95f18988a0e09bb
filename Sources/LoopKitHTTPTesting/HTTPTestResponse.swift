import HTTPTypes
import LoopKitHTTP
import LoopKitNet

/// A response as an ``HTTPTestClient`` read it off the wire.
///
/// A value: safe from any thread.
public struct HTTPTestResponse: Sendable, Hashable {
    /// The status.
    public var status: HTTPResponse.Status
    /// The fields, in wire order (`Date`, `Content-Length` and `Connection` included).
    public var headerFields: HTTPFields
    /// The body, de-chunked.
    public var body: Bytes

    /// The body as UTF-8 text.
    public var text: String { body.utf8String }

    /// The body read as a `text/event-stream`, whole: its events in order, parsed as a browser's
    /// `EventSource` parses them (comments skipped, `data` lines joined with `\n`, the last event id kept
    /// from one event to the next, CRLF, LF or CR line ends, a leading byte order mark skipped; a last
    /// event without its blank line is discarded). For a stream still open, read each event as it arrives
    /// with ``HTTPTestClient/nextEvent()``.
    ///
    /// ```swift
    /// let events = try client.execute(.get, "/build/7/log").serverSentEvents
    /// #expect(events.map(\.data) == ["compiling", "linking", "done"])
    /// ```
    public var serverSentEvents: [ServerSentEvent] { ServerSentEventParser.events(in: body) }

    /// Parses a response's head from the front of `bytes`.
    ///
    /// - Parameter bytes: What the client has received and not yet read.
    /// - Returns: The response with an empty body and where its body starts, or nil when the head is not
    ///   complete yet.
    /// - Throws: ``HTTPTestClientError/malformed(_:)``.
    static func parseHead(_ bytes: [UInt8]) throws(HTTPTestClientError) -> (HTTPTestResponse, Int)? {
        guard let headEnd = find([13, 10, 13, 10], in: bytes, from: 0) else { return nil }
        let lines = String(decoding: bytes[..<headEnd], as: UTF8.self).components(separatedBy: "\r\n")
        let statusParts = lines[0].split(separator: " ", maxSplits: 2)
        guard statusParts.count >= 2, statusParts[0].hasPrefix("HTTP/1."), let code = Int(statusParts[1]), (100...999).contains(code) else {
            throw .malformed("status line \(String(reflecting: lines[0]))")
        }
        var fields = HTTPFields()
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":"), let name = HTTPField.Name(String(line[..<colon])) else {
                throw .malformed("field line \(String(reflecting: line))")
            }
            fields.append(HTTPField(name: name, value: line[line.index(after: colon)...].trimmingCharacters(in: " \t")))
        }
        return (HTTPTestResponse(status: HTTPResponse.Status(code: code), headerFields: fields, body: []), headEnd + 4)
    }

    /// Parses one response from the front of `bytes`.
    ///
    /// - Parameters:
    ///   - bytes: What the client has received and not yet read.
    ///   - isHeadRequest: The request was `HEAD`: the fields describe a body that is not sent.
    ///   - atEndOfStream: The server has closed: a body without length ends here.
    /// - Returns: The response and the number of bytes it took, or nil when it is not complete yet.
    /// - Throws: ``HTTPTestClientError/malformed(_:)``.
    static func parse(_ bytes: [UInt8], isHeadRequest: Bool, atEndOfStream: Bool) throws(HTTPTestClientError) -> (HTTPTestResponse, Int)? {
        guard let (head, bodyStart) = try parseHead(bytes) else { return nil }
        var response = head
        let code = response.status.code
        let fields = response.headerFields
        if isHeadRequest || code < 200 || code == 204 || code == 304 { return (response, bodyStart) }
        if let length = fields[.contentLength] {
            guard let count = Int(length), count >= 0 else { throw .malformed("Content-Length \(length)") }
            guard bytes.count - bodyStart >= count else { return nil }
            response.body = Bytes(bytes[bodyStart..<(bodyStart + count)])
            return (response, bodyStart + count)
        }
        if fields[.transferEncoding]?.lowercased().contains("chunked") == true {
            var chunks: [Bytes] = []
            var cursor = bodyStart
            while true {
                guard let lineEnd = find([13, 10], in: bytes, from: cursor) else { return nil }
                let sizeText = String(decoding: bytes[cursor..<lineEnd], as: UTF8.self).split(separator: ";").first.map(String.init) ?? ""
                guard let size = Int(sizeText.trimmingCharacters(in: " "), radix: 16), size >= 0 else {
                    throw .malformed("chunk size \(String(reflecting: sizeText))")
                }
                cursor = lineEnd + 2
                if size == 0 {  // trailers, then the blank line
                    while true {
                        guard let end = find([13, 10], in: bytes, from: cursor) else { return nil }
                        let empty = end == cursor
                        cursor = end + 2
                        if empty {
                            response.body = Bytes(joining: chunks)
                            return (response, cursor)
                        }
                    }
                }
                guard bytes.count >= cursor + size + 2 else { return nil }
                chunks.append(Bytes(bytes[cursor..<(cursor + size)]))
                cursor += size + 2
            }
        }
        guard atEndOfStream else { return nil }  // a body delimited by the connection's end
        response.body = Bytes(bytes[bodyStart...])
        return (response, bytes.count)
    }

    static func find(_ needle: [UInt8], in bytes: [UInt8], from start: Int) -> Int? {
        guard bytes.count >= needle.count, start <= bytes.count - needle.count else { return nil }
        for index in start...(bytes.count - needle.count) where bytes[index] == needle[0] {
            if bytes[index..<(index + needle.count)].elementsEqual(needle) { return index }
        }
        return nil
    }
}

extension String {
    fileprivate func trimmingCharacters(in characters: String) -> String {
        String(drop { characters.contains($0) }.reversed().drop { characters.contains($0) }.reversed())
    }
}

extension Substring {
    fileprivate func trimmingCharacters(in characters: String) -> String { String(self).trimmingCharacters(in: characters) }
}
