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
