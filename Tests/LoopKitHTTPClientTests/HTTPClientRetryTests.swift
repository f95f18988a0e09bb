import LoopKitHTTPClient
import LoopKitNet
import Testing

@Suite("HTTPClient: a pooled connection the server closed")
struct HTTPClientRetryTests {
    @Test func requestOnAReusedConnectionTheServerClosedIsRetriedOnANewOne() async throws {
        let peer = try PeerServer("drop-reused")
        let loop = try ClientLoop()
        let client = loop.client()
        #expect(try await text(client.execute(peer.request("/hello"))) == "hello from connection 1")
        // The server reads this request on connection 1 and closes it unanswered: curl sent it on a reused
        // connection and got no byte back, so it sends it again on a new connection.
        #expect(try await text(client.execute(peer.request("/hello"))) == "hello from connection 2")
    }

    @Test func aBytesBodyIsResentOnTheRetry() async throws {
        let peer = try PeerServer("drop-reused")
        let loop = try ClientLoop()
        let client = loop.client()
        _ = try await text(client.execute(peer.request("/hello")))
        let response = try await client.execute(peer.request("/echo", method: .put), body: .bytes(Bytes("again")))
        #expect(try await text(response) == "again")
        #expect(response.head.headerFields[.init("X-Method")!] == "PUT")
    }
}
