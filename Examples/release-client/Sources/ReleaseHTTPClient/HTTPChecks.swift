import LoopKit
import LoopKitHTTP
import LoopKitNet

/// The server's routes and the checks that drive them from a client. Each check returns what its client
/// saw, in words; the expectation sits beside it in `main.swift`.
enum HTTPChecks {
    /// A pattern body: byte `i` is `i % 251`, so a lost, doubled or reordered chunk changes its checksum.
    static func patternBody(_ count: Int) -> [UInt8] {
        (0..<count).map { UInt8($0 % 251) }
    }

    /// Adler-32's first sum, enough to tell a body from a shuffled one.
    static func checksum<Chunk: Sequence<UInt8>>(_ chunks: some Sequence<Chunk>) -> Int {
        var sum = 1
        for chunk in chunks { for byte in chunk { sum = (sum + Int(byte)) % 65_521 } }
        return sum
    }

    static func router() -> HTTPRouter {
        var router = HTTPRouter()
        // Inline: answered inside the read callback.
        router.get("/hello") { _ in .text("Hello, World!") }
        // A streamed body read with `for await` in a task on the loop.
        router.on(.post, "/count", bodyLimit: nil) { request, body in
            var count = 0
            var sum = 1
            for try await chunk in body {
                count += chunk.count
                for byte in chunk { sum = (sum + Int(byte)) % 65_521 }
            }
            return .text("\(count) bytes, checksum \(sum)")
        }
        // A collected body, in a task.
        router.post("/reverse", .inTask) { request in
            await Task.yield()  // a real suspension inside the route's task
            return .text(String(decoding: request.body.reversed(), as: UTF8.self))
        }
        // Every message straight back, read with `for await` (the inlinable `next(isolation:)`).
        router.webSocket("/ws/echo", .inTask) { request, socket in
            for try await message in socket.messages {
                try await socket.send(message)
            }
        }
        return router
    }

    /// Two `GET /hello` on one kept-alive connection, the second sent before the first is answered.
    static func inlineRoutePipelined(port: Int, on loop: EventLoop) async throws -> [String] {
        var client = try await WireClient.connect(port: port, on: loop)
        defer { client.connection.close() }
        try client.write("GET /hello HTTP/1.1\r\nHost: release\r\n\r\nGET /hello HTTP/1.1\r\nHost: release\r\n\r\n")
        let first = try await client.readResponse()
        let second = try await client.readResponse()
        return ["\(first.status) \(first.body)", "\(second.status) \(second.body)"]
    }

    /// A 200,000-byte body with `Content-Length`, sent in three writes, then a chunked one on the same
    /// connection; the route reads both through `HTTPRequestBody` with `for await`.
    static func streamedRequestBodies(port: Int, on loop: EventLoop) async throws -> [String] {
        var client = try await WireClient.connect(port: port, on: loop)
        defer { client.connection.close() }
        let body = patternBody(200_000)
        try client.write("POST /count HTTP/1.1\r\nHost: release\r\nContent-Length: \(body.count)\r\n\r\n")
        try client.write(Array(body[..<1_000]))
        try client.write(Array(body[1_000..<150_000]))
        try client.write(Array(body[150_000...]))
        let lengthFramed = try await client.readResponse()
        let pieces = [Array("first ".utf8), patternBody(70_000), Array(" last".utf8)]
        var chunked = Array("POST /count HTTP/1.1\r\nHost: release\r\nTransfer-Encoding: chunked\r\n\r\n".utf8)
        for piece in pieces { chunked += Array((String(piece.count, radix: 16) + "\r\n").utf8) + piece + Array("\r\n".utf8) }
        chunked += Array("0\r\n\r\n".utf8)
        try client.write(chunked)
        let chunkFramed = try await client.readResponse()
        return ["\(lengthFramed.status) \(lengthFramed.body)", "\(chunkFramed.status) \(chunkFramed.body)"]
    }

    static func expectedStreamedRequestBodies() -> [String] {
        let pieces = [Array("first ".utf8), patternBody(70_000), Array(" last".utf8)]
        return ["200 200000 bytes, checksum \(checksum([patternBody(200_000)]))",
                "200 \(pieces.reduce(0) { $0 + $1.count }) bytes, checksum \(checksum(pieces))"]
    }

    /// A collected body answered by a task route.
    static func collectedBodyInATask(port: Int, on loop: EventLoop) async throws -> [String] {
        var client = try await WireClient.connect(port: port, on: loop)
        defer { client.connection.close() }
        try client.write("POST /reverse HTTP/1.1\r\nHost: release\r\nContent-Length: 14\r\n\r\nrelease client")
        let response = try await client.readResponse()
        return ["\(response.status) \(response.body)"]
    }

    /// Upgrades to a WebSocket, sends a text message, a 70,000-byte binary one (a 64-bit length) and three
    /// short ones in one write (the handler's `for await` then finds them waiting), reads the echoes,
    /// closes with 1000 and reads the server's close and the end of the stream.
    static func webSocketEcho(port: Int, on loop: EventLoop) async throws -> [String] {
        var client = try await WireClient.connect(port: port, on: loop)
        defer { client.connection.close() }
        try client.write("GET /ws/echo HTTP/1.1\r\nHost: release\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                         + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
        let upgrade = try await client.readHead()
        var seen = ["\(upgrade.status) \(upgrade.fields["sec-websocket-accept"] ?? "no accept")"]
        let binary = patternBody(70_000)
        try client.write(WireClient.maskedFrame(opcode: 0x1, Array("hello from a release build".utf8)))
        try client.write(WireClient.maskedFrame(opcode: 0x2, binary))
        try client.write(WireClient.maskedFrame(opcode: 0x1, Array("one".utf8)) + WireClient.maskedFrame(opcode: 0x1, Array("two".utf8))
                         + WireClient.maskedFrame(opcode: 0x1, Array("three".utf8)))
        for _ in 0..<5 {
            let frame = try await client.readFrame()
            switch frame.opcode {
            case 0x1: seen.append("text \(String(decoding: frame.payload, as: UTF8.self))")
            case 0x2: seen.append("binary \(frame.payload.count) bytes, checksum \(checksum([frame.payload]))")
            default: seen.append("opcode \(frame.opcode)")
            }
        }
        try client.write(WireClient.maskedFrame(opcode: 0x8, [0x03, 0xE8]))  // close, 1000
        let close = try await client.readFrame()
        let code = close.payload.count >= 2 ? Int(close.payload[0]) << 8 | Int(close.payload[1]) : -1
        seen.append("close \(close.opcode == 0x8 ? code : -1)")
        let rest = try await client.readToEnd()
        seen.append("then \(rest.count) bytes and the end")
        return seen
    }

    static func expectedWebSocketEcho() -> [String] {
        ["101 s3pPLMBiTxaQ9kYGzzhZRbK+xOo=", "text hello from a release build",
         "binary 70000 bytes, checksum \(checksum([patternBody(70_000)]))", "text one", "text two", "text three",
         "close 1000", "then 0 bytes and the end"]
    }

    /// LoopKitNet's echo server (`for try await chunk in connection.inbound`), sent 100,000 bytes in
    /// three writes and read back through the client's `inbound`.
    static func tcpInboundEcho(port: Int, on loop: EventLoop) async throws -> [String] {
        var client = try await WireClient.connect(port: port, on: loop)
        defer { client.connection.close() }
        let bytes = patternBody(100_000)
        try client.write(Array(bytes[..<10]))
        try client.write(Array(bytes[10..<60_000]))
        try client.write(Array(bytes[60_000...]))
        let echoed = try await client.read(exactly: bytes.count)
        return ["\(echoed.count) bytes, checksum \(checksum([echoed])), in order: \(echoed == bytes)"]
    }

    static func expectedTCPInboundEcho() -> [String] {
        ["100000 bytes, checksum \(checksum([patternBody(100_000)])), in order: true"]
    }
}
