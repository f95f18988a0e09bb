import Foundation
import HTTPTypes
import LoopKit
import LoopKitHTTPTesting
import Testing
@testable import LoopKitHTTP

/// On a plain HTTP/1 socket a file's body, or a single range of it, goes with `sendfile(2)` from the loop
/// (``HTTPBodyWriter/sendFile(_:from:count:)``): live sockets only, as an in-memory pair takes no file.
@Suite("Files over sendfile(2)")
struct FileSendfileTests {
    /// Several MiB, more than the socket buffers hold, so the send waits for the client's reading.
    static let big: [UInt8] = (0..<(6 * 1024 * 1024)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 11) }

    @Test func aFileLargerThanTheSocketsBuffersArrivesByteForByte() throws {
        try withFiles(mode: .live, { try $0.write("big.bin", Self.big) }) { client, _ in
            let response = try client.get("/static/big.bin")
            #expect(response.status == .ok)
            #expect(response.field(.contentLength) == String(Self.big.count))
            #expect(Array(response.body) == Self.big)
            // The connection goes on after it: the body ended exactly at its length.
            #expect(try client.get("/static/big.bin", [.range: "bytes=0-9"]).status == .partialContent)
        }
    }

    @Test func aSingleRangeIsSentFromItsOffset() throws {
        try withFiles(mode: .live, { try $0.write("big.bin", Self.big) }) { client, _ in
            let response = try client.get("/static/big.bin", [.range: "bytes=1000-2999999"])
            #expect(response.status == .partialContent)
            #expect(Array(response.body) == Array(Self.big[1000...2_999_999]))
            #expect(try client.get("/static/big.bin", method: .head).body.isEmpty)
        }
    }

    /// A file cut short while `sendfile(2)` sends it: the response ends short of its `Content-Length` with
    /// the connection closed (a client can tell it from a whole body), and the server answers the next one.
    @Test func aFileTruncatedWhileItIsSentClosesTheConnectionAndTheServerGoesOn() async throws {
        let fixture = try FileFixture()
        defer { fixture.remove() }
        let size = 48 * 1024 * 1024  // more than the socket buffers hold while the client does not read
        let path = try fixture.write("huge.bin", [UInt8](repeating: 7, count: size))
        try fixture.write("small.txt", "still here\n")
        var router = HTTPRouter()
        router.files("/static", root: fixture.root)
        try await withServer(router: router) { server, port in
            let client = try RawClient(port: port)
            client.send("GET /static/huge.bin HTTP/1.1\r\nHost: t\r\n\r\n")
            let end = Array("\r\n\r\n".utf8)
            var headEnd: Int?
            while headEnd == nil {
                guard client.fill() else { Issue.record("the connection ended before the head"); return }
                headEnd = client.buffer.indices.dropLast(3).first { Array(client.buffer[$0..<($0 + 4)]) == end }
            }
            let head = String(decoding: client.buffer[..<headEnd!], as: UTF8.self)
            #expect(head.hasPrefix("HTTP/1.1 200"))
            #expect(head.contains("Content-Length: \(size)"))
            #expect(truncate(path, 0) == 0)  // while the send waits for the client to read

            let body = client.readUntilClosed().count - (headEnd! + 4)  // the buffer still holds the head
            #expect(body < size, "the whole body arrived: the send had ended before the truncation")
            #expect(!client.lastReadTimedOut)  // closed by the server, not given up on
            #expect(try await eventually { try await server.openConnectionCount() == 0 })
            let next = try RawClient(port: port).exchange("GET /static/small.txt HTTP/1.1\r\nHost: t\r\n\r\n")
            #expect(next.status == 200)
            #expect(next.text == "still here\n")
        }
    }

    /// A file send waiting for a client that reads nothing is output that makes no progress: the write
    /// deadline cuts it, as it cuts queued output.
    @Test func aClientThatNeverReadsAFileLosesItsSocketAtTheWriteDeadline() async throws {
        let fixture = try FileFixture()
        defer { fixture.remove() }
        try fixture.write("huge.bin", [UInt8](repeating: 7, count: 48 * 1024 * 1024))
        var router = HTTPRouter()
        router.files("/static", root: fixture.root)
        let cuts = Recorder<HTTPServer.Configuration.Deadline>()
        try await withServer(router: router, configure: {
            $0.writeTimeout = .milliseconds(200)
            $0.connectionCut = { deadline in cuts.record(deadline) }
        }) { server, port in
            let client = try RawClient(port: port)
            client.send("GET /static/huge.bin HTTP/1.1\r\nHost: t\r\n\r\n")
            #expect(try await eventually { try await server.openConnectionCount() == 0 })
            #expect(cuts.all == [.writeProgress])
            _ = client.readUntilClosed()
        }
    }
}
