import Foundation
import HTTPTypes
import LoopKitNet
import Testing
@testable import LoopKitHTTP

/// The sizes the streaming route writes, one `Bytes` chunk each: below, at and above the size from which a
/// chunk is sent by reference (``HTTPConnection/bodyCopyThreshold``), and a 1-byte chunk between them.
private let chunkSizes = [100, HTTPConnection.bodyCopyThreshold - 1, HTTPConnection.bodyCopyThreshold, 1,
                          5_000, 70_000, 10, 65_536]

/// Chunk `index` of `size` bytes, each chunk a pattern of its own so that a swapped or shifted chunk shows.
func streamedChunk(_ index: Int, size: Int) -> [UInt8] {
    (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ index &* 7 &+ 1) }
}

/// The exact chunked framing of `chunks`: size in hex, CRLF, data, CRLF, then the last chunk.
private func chunkedWire(_ chunks: [[UInt8]]) -> [UInt8] {
    chunks.flatMap { Array(String($0.count, radix: 16).utf8) + Array("\r\n".utf8) + $0 + Array("\r\n".utf8) }
        + Array("0\r\n\r\n".utf8)
}

/// Nil when `received` is `expected`; otherwise where they first differ and their lengths (not the bytes:
/// a failure must not print megabytes).
private func difference(_ received: [UInt8], _ expected: [UInt8]) -> String? {
    guard received != expected else { return nil }
    let index = (0..<min(received.count, expected.count)).first { received[$0] != expected[$0] } ?? min(received.count, expected.count)
    return "received \(received.count) bytes, expected \(expected.count); first difference at byte \(index)"
}

/// The chunks `GET /chunks?sizes=…&repeat=N` streams.
func streamedChunks(sizes: [Int], rounds: Int) -> [[UInt8]] {
    (0..<rounds).flatMap { round in sizes.enumerated().map { streamedChunk(round * sizes.count + $0.offset, size: $0.element) } }
}

/// A router with `GET /chunks?sizes=…&repeat=N` only.
private func streamingRouter() -> HTTPRouter {
    var router = HTTPRouter()
    addStreamedChunksRoute(to: &router)
    return router
}

/// Adds `GET /chunks?sizes=…&repeat=N`: each size as one `Bytes` chunk, the list N times.
func addStreamedChunksRoute(to router: inout HTTPRouter) {
    router.get("/chunks") { request in
        let sizes = (request.query("sizes") ?? "").split(separator: ",").compactMap { Int($0) }
        let rounds = request.query("repeat").flatMap { Int($0) } ?? 1
        return HTTPServerResponse(status: .ok, body: .stream { writer in
            for round in 0..<rounds {
                for (index, size) in sizes.enumerated() {
                    try await writer.write(Bytes(streamedChunk(round * sizes.count + index, size: size)))
                }
            }
        })
    }
}

/// Response bodies a handler streams through ``HTTPBodyWriter``: what reaches the client, byte for byte.
@Suite("Streamed response bodies")
struct StreamedResponseBodyTests {
    /// The request for `sizes`, repeated `rounds` times, and the chunks it streams.
    private func request(_ sizes: [Int], rounds: Int = 1, version: String = "HTTP/1.1") -> (String, [[UInt8]]) {
        let list = sizes.map(String.init).joined(separator: ",")
        let chunks = streamedChunks(sizes: sizes, rounds: rounds)
        return ("GET /chunks?sizes=\(list)&repeat=\(rounds) \(version)\r\nHost: t\r\nConnection: close\r\n\r\n", chunks)
    }

    /// Everything after the head of the one response on `client`'s connection, read to its end.
    private func bodyOnTheWire(_ client: RawClient) -> [UInt8] {
        while client.fill() {}
        let separator = Array("\r\n\r\n".utf8)
        guard client.buffer.count >= separator.count, let end = (0...(client.buffer.count - separator.count)).first(where: {
            Array(client.buffer[$0..<$0 + separator.count]) == separator
        }) else { return [] }
        return Array(client.buffer[(end + separator.count)...])
    }

    @Test("Chunks from 2 KiB up, sent by reference, are framed exactly as copied ones: size line, data, CRLF")
    func largeChunksAreFramedExactly() async throws {
        try await withServer(router: streamingRouter()) { _, port in
            let client = try RawClient(port: port)
            let (text, chunks) = request(chunkSizes)
            client.send(text)
            #expect(difference(bodyOnTheWire(client), chunkedWire(chunks)) == nil)
        }
    }

    @Test("An HTTP/1.0 client gets every chunk raw, in order, and the body ends with the connection")
    func anHTTP10ClientGetsTheChunksRaw() async throws {
        try await withServer(router: streamingRouter()) { _, port in
            let client = try RawClient(port: port)
            let (text, chunks) = request(chunkSizes, version: "HTTP/1.0")
            client.send(text)
            #expect(difference(bodyOnTheWire(client), chunks.flatMap { $0 }) == nil)
        }
    }

    @Test("Chunks queued behind output the client has not read yet arrive whole and in order (8 MiB)")
    func chunksQueuedBehindUnreadOutputArriveIntact() async throws {
        try await withServer(router: streamingRouter()) { _, port in
            let client = try RawClient(port: port)
            // 128 chunks of 64 KiB: more than the socket takes at once, so the writer waits for room and
            // chunks queue behind unsent output; the client reads only after sending the whole request.
            let (text, chunks) = request([65_536], rounds: 128)
            client.send(text)
            #expect(difference(bodyOnTheWire(client), chunkedWire(chunks)) == nil)
        }
    }
}
