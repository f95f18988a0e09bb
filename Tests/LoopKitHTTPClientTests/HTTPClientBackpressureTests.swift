import LoopKitHTTPClient
import Testing

@Suite("HTTPClient: response body backpressure")
struct HTTPClientBackpressureTests {
    @Test func aConsumerThatDoesNotReadPausesTheTransferThenReadsItAll() async throws {
        let peer = try PeerServer("serve")
        let loop = try ClientLoop()
        let client = loop.client()
        let total = 64 << 20
        let response = try await client.execute(peer.request("/big?\(total)"))
        // Nothing read: the client stops taking bytes at its high water mark, the kernel's buffers fill, and
        // the server's sends find the socket not writable (it notes that as "stalled").
        #expect(try await eventually { try await text(client.execute(peer.request("/stalled"))) == "yes" })
        var count = 0
        for try await chunk in response.body { count += chunk.count }
        #expect(count == total)
    }

    @Test func droppingTheBodyUnreadEndsTheTransfer() async throws {
        let peer = try PeerServer("serve")
        let loop = try ClientLoop()
        var configuration = HTTPClient.Configuration()
        configuration.maximumConnectionsPerHost = 1
        let client = loop.client(configuration)
        do {
            let response = try await client.execute(peer.request("/big?\(256 << 20)"))
            _ = response.head
        }
        // The only connection to the host was the dropped transfer's: the next request gets one only
        // because that transfer ended (and its connection closed).
        #expect(try await text(client.execute(peer.request("/hello"))) == "hello from connection 2")
    }
}
