import Glibc
import HTTPTypes
import LoopKit
import LoopKitNet

/// One HTTP/1.1 connection of the own engine (``OwnEngine``): a LoopKitNet ``Connection``'s handler that
/// writes one request at a time and reads its response — the head through ``ResponseHeadParser``, the body
/// framed by `Content-Length`, chunked transfer coding or the connection's end — into the exchange's
/// ``ResponseBodyStream``. A response that leaves the connection reusable returns it to its host's pool.
///
/// Loop-confined: the connection calls it on its loop's thread, the engine likewise.
final class HTTP1Connection: ConnectionHandler {
    /// Where the response is.
    private enum Phase {
        /// No exchange: the connection is idle (or connecting).
        case idle
        /// Reading the head's lines.
        case head
        /// `remaining` body bytes of a `Content-Length` body.
        case length(remaining: Int)
        /// The body runs to the connection's end.
        case untilClose
        /// A chunk's size line.
        case chunkSize
        /// `remaining` bytes of the current chunk.
        case chunkData(remaining: Int)
        /// The CRLF after a chunk's data.
        case chunkEnd
        /// The trailer section after the last chunk, to its blank line.
        case trailers
    }

    /// What the caller of ``parse(_:)`` does with the connection once it has returned.
    private enum After { case nothing, close, abort }

    let connection: Connection
    let key: String
    /// Weak: a close the connection reports after the engine went (the client dropped) finds nobody.
    private weak var engine: OwnEngine?
    private(set) var exchange: Exchange?
    private var phase = Phase.idle
    private var head = ResponseHeadParser()
    private var headBytes = 0
    private var sawStatusLine = false
    private var version = 11
    private var keepAlive = true
    /// A byte of the current exchange's response arrived (a reused connection that closes before one is
    /// the retry's case).
    private var receivedResponseByte = false
    /// Responses this connection has carried: more than 0 when a request goes out on a reused connection.
    private(set) var responses = 0
    /// Reading is paused: the body's buffer is at its high water mark.
    private var pausedForBody = false
    private var after = After.nothing
    /// The engine has let go of the connection (it closed or is closing).
    var isGone = false
    /// When the connection went idle (``EventLoop``'s clock), for the idle timeout.
    var idleSince: UInt64 = 0

    /// The longest head line and the largest head read before the response is refused.
    static let maximumLine = 16 * 1024
    static let maximumHead = 64 * 1024

    init(connection: Connection, key: String, engine: OwnEngine) {
        self.connection = connection
        self.key = key
        self.engine = engine
    }

    /// Whether the request now sent goes out on a connection that carried a response before.
    var isReused: Bool { responses > 0 }

    // MARK: sending

    /// Sends `exchange`'s request and reads its response next. Loop thread.
    /// - Throws: ``NetError`` when the connection no longer takes writes.
    func send(_ exchange: Exchange) throws(NetError) {
        self.exchange = exchange
        phase = .head
        head = ResponseHeadParser()
        headBytes = 0
        sawStatusLine = false
        receivedResponseByte = false
        let request = exchange.request
        // A request that says `Connection: close` leaves the connection closing after its response.
        keepAlive = request.headerFields[.connection].map { !$0.lowercased().contains("close") } ?? true
        after = .nothing
        let capacity = RequestHeadEncoder.capacity(request, bodyLength: exchange.body?.count)
        let encode: (UnsafeMutableRawBufferPointer) -> Int = { buffer in
            RequestHeadEncoder.encode(request, bodyLength: exchange.body?.count, into: buffer)
        }
        do {
            if let body = exchange.body, !body.isEmpty {
                try connection.write(reservingCapacity: capacity, encode, followedBy: body)
            } else {
                try connection.write(reservingCapacity: capacity, encode)
            }
        } catch {
            self.exchange = nil
            phase = .idle
            throw error
        }
    }

    // MARK: the connection's events

    func connection(_ connection: Connection, received bytes: UnsafeRawBufferPointer) -> Int {
        let consumed = parse(bytes)
        finishParse()
        engine?.flush()
        return consumed
    }

    func connection(_ connection: Connection, closedWith reason: CloseReason) {
        guard let engine else { return }
        if let exchange {
            self.exchange = nil
            if case .untilClose = phase, reason == .peerClosed {
                phase = .idle
                engine.responseEnded(exchange, on: self, reusable: false)
            } else {
                phase = .idle
                engine.connectionLost(exchange, on: self, reason: reason, receivedResponseByte: receivedResponseByte)
            }
        }
        engine.connectionGone(self)
        engine.flush()
    }

    /// The body's reader drained the buffer: reading goes on, first with the bytes already buffered.
    func resumeForBody() {
        guard pausedForBody, !isGone else { return }
        pausedForBody = false
        connection.resumeReading()
        connection.consumeBufferedInput { parse($0) }
        finishParse()
    }

    /// Ends the connection now (a cancelled or timed-out exchange: the rest of its response is unread).
    func abortExchange() {
        exchange = nil
        phase = .idle
        connection.abort()
    }

    private func finishParse() {
        switch after {
        case .nothing: return
        case .close: connection.close()
        case .abort: connection.abort()
        }
        after = .nothing
    }

    // MARK: parsing

    /// Reads what it can of the response from `bytes`; returns the count consumed (the rest is lent again).
    private func parse(_ bytes: UnsafeRawBufferPointer) -> Int {
        var index = 0
        let count = bytes.count
        if count > 0, exchange != nil { receivedResponseByte = true }
        while index < count, !pausedForBody, after == .nothing {
            guard let exchange else {
                // Bytes no request asked for (an idle connection): the connection cannot be trusted.
                after = .close
                return count
            }
            switch phase {
            case .idle:
                after = .close
                return count
            case .head:
                guard let end = Self.lineEnd(bytes, from: index) else {
                    if count - index > Self.maximumLine { fail(exchange, "a response head line is longer than \(Self.maximumLine) bytes") }
                    return index
                }
                let line = UnsafeRawBufferPointer(rebasing: bytes[index..<end])
                index = end
                headBytes += line.count
                guard headBytes <= Self.maximumHead else {
                    fail(exchange, "the response head is larger than \(Self.maximumHead) bytes")
                    return index
                }
                readHeadLine(line, exchange)
            case .length(let remaining):
                let take = min(remaining, count - index)
                guard offer(UnsafeRawBufferPointer(rebasing: bytes[index..<(index + take)]), exchange) else { return index }
                index += take
                if take == remaining {
                    complete(exchange, leftover: index < count)
                } else {
                    phase = .length(remaining: remaining - take)
                }
            case .untilClose:
                guard offer(UnsafeRawBufferPointer(rebasing: bytes[index...]), exchange) else { return index }
                index = count
            case .chunkSize:
                guard let end = Self.lineEnd(bytes, from: index) else {
                    if count - index > Self.maximumLine { fail(exchange, "a chunk size line is longer than \(Self.maximumLine) bytes") }
                    return index
                }
                guard let size = Self.chunkSize(UnsafeRawBufferPointer(rebasing: bytes[index..<end])) else {
                    fail(exchange, "a malformed chunk size line")
                    return end
                }
                index = end
                phase = size == 0 ? .trailers : .chunkData(remaining: size)
            case .chunkData(let remaining):
                let take = min(remaining, count - index)
                guard offer(UnsafeRawBufferPointer(rebasing: bytes[index..<(index + take)]), exchange) else { return index }
                index += take
                phase = take == remaining ? .chunkEnd : .chunkData(remaining: remaining - take)
            case .chunkEnd:
                guard let end = Self.lineEnd(bytes, from: index) else { return index }
                guard end - index <= 2 else {
                    fail(exchange, "a chunk's data is longer than its size")
                    return end
                }
                index = end
                phase = .chunkSize
            case .trailers:
                guard let end = Self.lineEnd(bytes, from: index) else {
                    if count - index > Self.maximumLine { fail(exchange, "a trailer line is longer than \(Self.maximumLine) bytes") }
                    return index
                }
                let blank = end - index <= 2
                index = end
                if blank { complete(exchange, leftover: index < count) }
            }
        }
        return index
    }

    private func readHeadLine(_ line: UnsafeRawBufferPointer, _ exchange: Exchange) {
        if !sawStatusLine {
            if line.count <= 2 && (line.first == 0x0D || line.first == 0x0A) { return }  // a stray blank line before it
            guard let version = Self.statusLineVersion(line) else {
                fail(exchange, "a malformed response status line")
                return
            }
            self.version = version
            sawStatusLine = true
        }
        guard case .end = head.read(line), let status = head.status else { return }
        if status.kind == .informational {
            guard status.code != 101 else {
                fail(exchange, "the server switched protocols (101), which the client did not ask for")
                return
            }
            head = ResponseHeadParser()
            sawStatusLine = false
            return
        }
        headEnded(status, exchange)
    }

    /// The final head is in: the body's framing, whether the connection stays open, the head delivered
    /// (or a redirect noted).
    private func headEnded(_ status: HTTPResponse.Status, _ exchange: Exchange) {
        let fields = head.fields
        if let connectionField = fields[.connection] {
            let lowered = connectionField.lowercased()
            if lowered.contains("close") { keepAlive = false } else if version == 10 { keepAlive = lowered.contains("keep-alive") }
        } else if version == 10 {
            keepAlive = false
        }
        var bodyless = exchange.request.method == .head || status.code == 204 || status.code == 304
        if !bodyless, let coding = fields[.transferEncoding] {
            if Self.endsWithChunked(coding) {
                phase = .chunkSize
            } else {
                phase = .untilClose
                keepAlive = false
            }
        } else if !bodyless, let lengthField = fields[.contentLength] {
            guard let length = Self.contentLength(lengthField) else {
                fail(exchange, "a malformed Content-Length: \(lengthField)")
                return
            }
            if length == 0 { bodyless = true } else { phase = .length(remaining: length) }
        } else if !bodyless {
            phase = .untilClose
            keepAlive = false
        }
        engine?.headArrived(exchange, status: status, fields: fields, version: version)
        if bodyless { complete(exchange, leftover: false) }
    }

    /// Hands body bytes to the exchange's stream; false when it refused them (reading pauses, the bytes stay
    /// buffered and are offered again on resume).
    private func offer(_ bytes: UnsafeRawBufferPointer, _ exchange: Exchange) -> Bool {
        guard !bytes.isEmpty else { return true }
        guard let stream = exchange.stream else { return true }  // a followed redirect's body: dropped
        switch stream.offer(Bytes(copying: bytes)) {
        case .taken:
            return true
        case .takenAtHighWater:
            pauseForBody()
            return true
        case .refused:
            pauseForBody()
            return false
        }
    }

    private func pauseForBody() {
        pausedForBody = true
        connection.pauseReading()
    }

    /// The response ended: the connection goes back to its pool when it can carry another.
    private func complete(_ exchange: Exchange, leftover: Bool) {
        self.exchange = nil
        phase = .idle
        responses += 1
        let reusable = keepAlive && !leftover
        if !reusable { after = .close }
        engine?.responseEnded(exchange, on: self, reusable: reusable)
    }

    private func fail(_ exchange: Exchange, _ message: String) {
        self.exchange = nil
        phase = .idle
        after = .abort
        engine?.fail(exchange, HTTPClientError(.transport, "the response is malformed: \(message)"))
    }

    // MARK: bytes

    /// The index after the next LF from `start`, nil when there is none yet.
    private static func lineEnd(_ bytes: UnsafeRawBufferPointer, from start: Int) -> Int? {
        guard start < bytes.count, let base = bytes.baseAddress else { return nil }
        guard let found = memchr(base + start, 0x0A, bytes.count - start) else { return nil }
        return UnsafeRawPointer(found) - base + 1
    }

    /// `HTTP/1.x NNN`: 10 or 11; nil for anything else.
    private static func statusLineVersion(_ line: UnsafeRawBufferPointer) -> Int? {
        guard line.count >= 12, line[0] == UInt8(ascii: "H"), line[1] == UInt8(ascii: "T"), line[2] == UInt8(ascii: "T"),
            line[3] == UInt8(ascii: "P"), line[4] == UInt8(ascii: "/"), line[5] == UInt8(ascii: "1"), line[6] == UInt8(ascii: "."),
            line[7] &- UInt8(ascii: "0") < 10, line[8] == UInt8(ascii: " "),
            line[9] &- UInt8(ascii: "0") < 10, line[10] &- UInt8(ascii: "0") < 10, line[11] &- UInt8(ascii: "0") < 10
        else { return nil }
        return line[7] == UInt8(ascii: "0") ? 10 : 11
    }

    /// A chunk size line's hexadecimal size (extensions after `;` ignored); nil when malformed or too large.
    private static func chunkSize(_ line: UnsafeRawBufferPointer) -> Int? {
        var size = 0, digits = 0
        for byte in line {
            let value: Int
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): value = Int(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): value = Int(byte - UInt8(ascii: "a")) + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): value = Int(byte - UInt8(ascii: "A")) + 10
            case UInt8(ascii: ";"), UInt8(ascii: " "), UInt8(ascii: "\t"), 0x0D, 0x0A:
                return digits > 0 ? size : nil
            default: return nil
            }
            guard digits < 15 else { return nil }
            size = size << 4 | value
            digits += 1
        }
        return digits > 0 ? size : nil
    }

    /// A `Content-Length` value: digits only (a list of equal values, which RFC 9110 allows, taken as one).
    private static func contentLength(_ value: String) -> Int? {
        var result: Int?
        for part in value.utf8.split(separator: UInt8(ascii: ",")) {
            var length = 0, digits = 0
            for byte in part where byte != UInt8(ascii: " ") && byte != UInt8(ascii: "\t") {
                guard byte &- UInt8(ascii: "0") < 10, digits < 18 else { return nil }
                length = length * 10 + Int(byte - UInt8(ascii: "0"))
                digits += 1
            }
            guard digits > 0, result == nil || result == length else { return nil }
            result = length
        }
        return result
    }

    /// Whether a `Transfer-Encoding` value's last coding is `chunked`.
    private static func endsWithChunked(_ value: String) -> Bool {
        guard let last = value.split(separator: ",").last else { return false }
        return last.trimmingSpaces.lowercased() == "chunked"
    }
}

extension Substring {
    fileprivate var trimmingSpaces: Substring {
        var trimmed = self
        while trimmed.first == " " || trimmed.first == "\t" { trimmed.removeFirst() }
        while trimmed.last == " " || trimmed.last == "\t" { trimmed.removeLast() }
        return trimmed
    }
}

/// A request head as HTTP/1.1 bytes: `METHOD path HTTP/1.1`, `Host`, the request's fields, a
/// `Content-Length` for a body, the blank line.
enum RequestHeadEncoder {
    /// An upper bound of ``encode(_:bodyLength:into:)``'s bytes.
    static func capacity(_ request: HTTPRequest, bodyLength: Int?) -> Int {
        var total = request.method.rawValue.utf8.count + (request.path ?? "/").utf8.count + 13
        total += 8 + (request.authority ?? "").utf8.count
        for field in request.headerFields { total += field.name.rawName.utf8.count + field.value.utf8.count + 4 }
        if bodyLength != nil { total += 16 + 22 }
        return total + 2
    }

    /// Writes the head into `buffer` (at least ``capacity(_:bodyLength:)`` bytes); returns the count.
    static func encode(_ request: HTTPRequest, bodyLength: Int?, into buffer: UnsafeMutableRawBufferPointer) -> Int {
        var writer = Writer(base: buffer.baseAddress!)
        writer.append(request.method.rawValue)
        writer.append(byte: UInt8(ascii: " "))
        writer.append(request.path ?? "/")
        writer.append(" HTTP/1.1\r\nHost: ")
        writer.append(request.authority ?? "")
        writer.append("\r\n")
        for field in request.headerFields {
            if field.name == .contentLength {
                if bodyLength != nil { continue }  // the engine's own, from the body
            } else if field.name == .transferEncoding, bodyLength != nil {
                continue
            }
            writer.append(field.name.rawName)
            writer.append(": ")
            writer.append(field.value)
            writer.append("\r\n")
        }
        if let bodyLength {
            writer.append("Content-Length: ")
            writer.append(decimal: bodyLength)
            writer.append("\r\n")
        }
        writer.append("\r\n")
        return writer.count
    }

    private struct Writer {
        let base: UnsafeMutableRawPointer
        var count = 0

        mutating func append(byte: UInt8) {
            base.storeBytes(of: byte, toByteOffset: count, as: UInt8.self)
            count += 1
        }

        mutating func append(_ string: String) {
            let done: Void? = string.utf8.withContiguousStorageIfAvailable { utf8 in
                (base + count).copyMemory(from: utf8.baseAddress!, byteCount: utf8.count)
                count += utf8.count
            }
            if done == nil { for byte in string.utf8 { append(byte: byte) } }
        }

        mutating func append(_ string: StaticString) {
            (base + count).copyMemory(from: string.utf8Start, byteCount: string.utf8CodeUnitCount)
            count += string.utf8CodeUnitCount
        }

        mutating func append(decimal value: Int) {
            var digits: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
                         UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) =
                (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
            var length = 0
            var rest = max(0, value)
            withUnsafeMutableBytes(of: &digits) { digits in
                repeat {
                    digits[length] = UInt8(ascii: "0") + UInt8(rest % 10)
                    rest /= 10
                    length += 1
                } while rest > 0
                for index in 0..<length { append(byte: digits[length - 1 - index]) }
            }
        }
    }
}
