import HTTPTypes
import LoopKitHTTP
import LoopKitNet

// Server-sent events as a test reads them: a whole buffered body (`HTTPTestResponse.serverSentEvents`) or
// a stream still open, one event at a time (`nextEvent()`), both through one parser of the HTML
// standard's rules (`ServerSentEventParser`).

extension HTTPTestClient {
    /// Reads the next event of a `text/event-stream` response that is still open: in memory, steps the
    /// loop until it has arrived; live, waits for it. The first call after a request reads the response's
    /// head; the call after the stream's last event returns nil (the response ended, and the next call
    /// reads the next response's head).
    ///
    /// ```swift
    /// try client.send(HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/jobs/7/events"))
    /// while let event = try client.nextEvent() {
    ///     if event.event == "finished" { break }
    /// }
    /// ```
    ///
    /// Events are parsed as a browser's `EventSource` parses them (see ``HTTPTestResponse/serverSentEvents``).
    ///
    /// - Returns: The next event, or nil when the stream ended (its last chunk, its length, or the server
    ///   closing a stream without either).
    /// - Throws: ``HTTPTestClientError/notAnEventStream(_:)`` when the response is not `200` with
    ///   `Content-Type: text/event-stream` (the whole response, read); ``HTTPTestClientError/noResponse(received:)``
    ///   in memory when the loop goes idle before the next event (the server waits for input or for time:
    ///   ``advance(by:)``); ``HTTPTestClientError/timedOut(after:received:)`` live;
    ///   ``HTTPTestClientError/closedEarly(received:)`` when the server closes a chunked stream before its
    ///   end; ``HTTPTestClientError/malformed(_:)``.
    public func nextEvent() throws -> ServerSentEvent? {
        while true {
            // The end first, then the bytes (as nextResponse reads them).
            let closed = transport.isClosedByServer
            buffer += transport.takeReceived()
            guard eventStream != nil else {
                if let (head, bodyStart) = try HTTPTestResponse.parseHead(buffer) {
                    let contentType = head.headerFields[.contentType]?.lowercased() ?? ""
                    guard head.status == .ok, contentType.hasPrefix("text/event-stream") else {
                        throw HTTPTestClientError.notAnEventStream(try nextResponse())
                    }
                    buffer.removeFirst(bodyStart)
                    eventStream = try EventStreamReader(head)
                    continue
                }
                if closed { throw HTTPTestClientError.closedEarly(received: receivedText) }
                try waitForBytes()
                continue
            }
            try eventStream!.consume(&buffer, atEndOfStream: closed)
            if let event = eventStream!.parser.nextEvent() { return event }
            if eventStream!.isEnded {
                eventStream = nil
                return nil
            }
            if closed {
                eventStream = nil
                throw HTTPTestClientError.closedEarly(received: receivedText)
            }
            try waitForBytes()
        }
    }

    /// Reads the next event of a stream still open, as ``nextEvent()``, suspending until it has arrived.
    ///
    /// ```swift
    /// @Test func theJobReportsItsEnd() async throws {
    ///     let client = try HTTPTestClient(router: router, mode: .live)
    ///     try await client.send(HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/jobs/7/events"))
    ///     var kinds: [String?] = []
    ///     while let event = try await client.nextEvent() { kinds.append(event.event) }
    ///     #expect(kinds.last == "finished")
    /// }
    /// ```
    nonisolated(nonsending) public func nextEvent() async throws -> ServerSentEvent? {
        try await onClientThread { try $0.nextEvent() }
    }
}

/// The body of an event stream being read: its framing undone as bytes arrive (chunked, a length, or up
/// to the connection's end), the events parsed from what it carries.
struct EventStreamReader {
    enum Framing {
        /// Chunks: `remaining` bytes of the current chunk still to come (nil: a size line is next), then
        /// its CRLF when `awaitingCRLF`; `inTrailers` after the last chunk.
        case chunked(remaining: Int?, awaitingCRLF: Bool, inTrailers: Bool)
        /// `Content-Length`: this many bytes still to come.
        case length(Int)
        /// Up to the connection's end.
        case untilClose
    }

    var framing: Framing
    var parser = ServerSentEventParser()
    private(set) var isEnded = false

    init(_ head: HTTPTestResponse) throws(HTTPTestClientError) {
        if head.headerFields[.transferEncoding]?.lowercased().contains("chunked") == true {
            framing = .chunked(remaining: nil, awaitingCRLF: false, inTrailers: false)
        } else if let length = head.headerFields[.contentLength] {
            guard let count = Int(length), count >= 0 else { throw .malformed("Content-Length \(length)") }
            framing = .length(count)
            isEnded = count == 0
        } else {
            framing = .untilClose
        }
    }

    /// Takes what it can of the body from the front of `buffer` into the parser; what follows the body's
    /// end stays for the next response.
    mutating func consume(_ buffer: inout [UInt8], atEndOfStream: Bool) throws(HTTPTestClientError) {
        guard !isEnded else { return }
        switch framing {
        case .untilClose:
            parser.feed(buffer)
            buffer.removeAll()
            isEnded = atEndOfStream
        case .length(let remaining):
            let taken = min(remaining, buffer.count)
            parser.feed(buffer[..<taken])
            buffer.removeFirst(taken)
            framing = .length(remaining - taken)
            isEnded = remaining == taken
        case .chunked(var remaining, var awaitingCRLF, var inTrailers):
            var cursor = 0
            defer {
                buffer.removeFirst(cursor)
                framing = .chunked(remaining: remaining, awaitingCRLF: awaitingCRLF, inTrailers: inTrailers)
            }
            while cursor < buffer.count {
                if inTrailers {
                    guard let end = HTTPTestResponse.find([13, 10], in: buffer, from: cursor) else { return }
                    let empty = end == cursor
                    cursor = end + 2
                    if empty {
                        isEnded = true
                        return
                    }
                } else if let left = remaining, left > 0 {
                    let taken = min(left, buffer.count - cursor)
                    parser.feed(buffer[cursor..<(cursor + taken)])
                    cursor += taken
                    remaining = left - taken
                } else if awaitingCRLF {
                    guard buffer.count - cursor >= 2 else { return }
                    guard buffer[cursor] == 13, buffer[cursor + 1] == 10 else { throw .malformed("no CRLF after a chunk") }
                    cursor += 2
                    awaitingCRLF = false
                    remaining = nil
                } else {
                    guard let lineEnd = HTTPTestResponse.find([13, 10], in: buffer, from: cursor) else { return }
                    let line = String(decoding: buffer[cursor..<lineEnd], as: UTF8.self)
                    let sizeText = line.split(separator: ";").first.map { $0.filter { $0 != " " } } ?? ""
                    guard let size = Int(sizeText, radix: 16), size >= 0 else {
                        throw .malformed("chunk size \(String(reflecting: line))")
                    }
                    cursor = lineEnd + 2
                    if size == 0 {
                        inTrailers = true
                    } else {
                        remaining = size
                        awaitingCRLF = true
                    }
                }
            }
        }
    }
}
