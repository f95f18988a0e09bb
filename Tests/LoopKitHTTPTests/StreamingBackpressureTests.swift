import Testing
@testable import LoopKitHTTP

@Suite("Streaming with backpressure")
struct StreamingBackpressureTests {
    @Test func clientThatNeverReadsKeepsServerOutputBounded() async throws {
        let highWater = 64 * 1024
        // A reader that never reads, on purpose: the write deadline stays out of this test (see DeadlineTests).
        try await withServer(configure: { $0.writeHighWaterMark = highWater; $0.writeTimeout = .seconds(3_600) }) { server, port in
            StreamCounter.written.store(0, ordering: .relaxed)
            let total = 256 * 1024 * 1024
            var client: RawClient? = try RawClient(port: port)
            client?.send("GET /stream?bytes=\(total) HTTP/1.1\r\nHost: t\r\n\r\n")
            // Wait until the writer is suspended: the kernel's buffers are full and the server's pending
            // output has gone above the high-water mark (a write is never refused, the writer then waits).
            #expect(try await eventually { try await server.pendingOutputBytes() > highWater })
            let pending = try await server.pendingOutputBytes()
            #expect(pending <= highWater + 16 * 1024 + 256)  // the mark, plus one chunk and its framing
            #expect(StreamCounter.written.load(ordering: .relaxed) < total / 8)
            // The client goes away: the suspended writer ends on its loop before the loop shuts down.
            client = nil
            #expect(try await eventually { try await server.openConnectionCount() == 0 })
        }
    }

    @Test func streamToAClientThatGoesAwayEnds() async throws {
        try await withServer { server, port in
            do {
                let client = try RawClient(port: port)
                client.send("GET /stream?bytes=100000000 HTTP/1.1\r\nHost: t\r\n\r\n")
                _ = client.fill()
            }  // closed without reading the rest
            #expect(try await eventually { try await server.openConnectionCount() == 0 })
        }
    }
}
