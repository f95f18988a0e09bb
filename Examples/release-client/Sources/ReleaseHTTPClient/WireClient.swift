import LoopKit
import LoopKitNet

/// What a check's client saw that it did not expect.
struct WireError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// A response head as a client reads it: the status code and the fields, names in lower case.
struct ResponseHead {
    var status: Int
    var fields: [String: String]
}

/// A client connection to a server of this process, read through LoopKitNet's `inbound` (its iterator's
/// `next(isolation:)`, as `for await` calls it), keeping what it has read and not used yet.
///
/// Not `Sendable`: made and used inside one task whose executor preference is the connection's loop.
struct WireClient {
    let connection: TCPConnection
    private var inbound: TCPConnection.Inbound.Iterator
    private var unread: [UInt8] = []

    /// Connects to 127.0.0.1:`port` from a connection on `loop`. Call from a task on `loop`.
    static func connect(port: Int, on loop: EventLoop) async throws -> WireClient {
        let connection = try await TCPConnection.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: port), on: loop)
        return WireClient(connection: connection)
    }

    private init(connection: TCPConnection) {
        self.connection = connection
        inbound = connection.inbound.makeAsyncIterator()
    }

    /// Queues `bytes` (sent when the loop gets to it).
    func write(_ bytes: [UInt8]) throws {
        try connection.write(Bytes(bytes))
    }

    func write(_ text: String) throws {
        try write(Array(text.utf8))
    }

    /// Reads one more chunk into `unread`; false at the end of the stream.
    private mutating func fill() async throws -> Bool {
        guard let chunk = try await inbound.next(isolation: #isolation) else { return false }
        unread += chunk
        return true
    }

    /// The next `count` bytes.
    mutating func read(exactly count: Int) async throws -> [UInt8] {
        while unread.count < count {
            guard try await fill() else { throw WireError("the stream ended after \(unread.count) of \(count) bytes") }
        }
        let bytes = Array(unread[..<count])
        unread.removeFirst(count)
        return bytes
    }

    /// Every byte until the server closes the connection.
    mutating func readToEnd() async throws -> [UInt8] {
        while try await fill() {}
        defer { unread = [] }
        return unread
    }

    /// The next response head (up to and with its blank line).
    mutating func readHead() async throws -> ResponseHead {
        let terminator: [UInt8] = Array("\r\n\r\n".utf8)
        var end: Int?
        while end == nil {
            if unread.count >= 4 {
                end = (0...(unread.count - 4)).first { unread[$0..<($0 + 4)].elementsEqual(terminator) }
            }
            if end == nil, !(try await fill()) { throw WireError("the stream ended inside a response head") }
        }
        let text = String(decoding: unread[..<end!], as: UTF8.self)
        unread.removeFirst(end! + 4)
        var lines = text.split(separator: "\r\n", omittingEmptySubsequences: false)
        let statusLine = lines.removeFirst().split(separator: " ")
        guard statusLine.count >= 2, statusLine[0] == "HTTP/1.1", let status = Int(statusLine[1]) else {
            throw WireError("not a status line: \(text)")
        }
        var fields: [String: String] = [:]
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { throw WireError("not a field line: \(line)") }
            fields[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingPrefix(" ").description
        }
        return ResponseHead(status: status, fields: fields)
    }

    /// The next response, its body framed by `Content-Length`: status and body as text.
    mutating func readResponse() async throws -> (status: Int, body: String) {
        let head = try await readHead()
        guard let length = head.fields["content-length"].flatMap({ Int($0) }) else {
            throw WireError("a response without Content-Length: \(head.fields)")
        }
        return (head.status, String(decoding: try await read(exactly: length), as: UTF8.self))
    }

    // MARK: WebSocket frames (RFC 6455 §5.2)

    /// A client's frame: FIN set, masked (as a client must), with the length's shortest form.
    static func maskedFrame(opcode: UInt8, _ payload: [UInt8]) -> [UInt8] {
        let mask: [UInt8] = [0x5A, 0x17, 0xC3, 0x8E]
        var frame: [UInt8] = [0x80 | opcode]
        switch payload.count {
        case ..<126:
            frame.append(0x80 | UInt8(payload.count))
        case ..<65_536:
            frame += [0x80 | 126, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
        default:
            frame.append(0x80 | 127)
            frame += (0..<8).reversed().map { UInt8((payload.count >> ($0 * 8)) & 0xFF) }
        }
        frame += mask
        frame += payload.enumerated().map { $0.element ^ mask[$0.offset % 4] }
        return frame
    }

    /// The server's next frame: its opcode and payload (a server's frames are never masked).
    mutating func readFrame() async throws -> (opcode: UInt8, payload: [UInt8]) {
        let header = try await read(exactly: 2)
        guard header[0] & 0x80 != 0 else { throw WireError("a fragmented frame from the server") }
        guard header[1] & 0x80 == 0 else { throw WireError("a masked frame from the server") }
        var length = Int(header[1] & 0x7F)
        if length == 126 {
            length = try await read(exactly: 2).reduce(0) { $0 << 8 | Int($1) }
        } else if length == 127 {
            length = try await read(exactly: 8).reduce(0) { $0 << 8 | Int($1) }
        }
        return (header[0] & 0x0F, try await read(exactly: length))
    }
}
