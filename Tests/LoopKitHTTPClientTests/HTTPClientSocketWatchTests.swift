import Glibc
import HTTPTypes
@testable import LoopKitHTTPClient
import LoopKitNet
import Testing

/// The watches the client keeps on curl's sockets: a connection's watch is paused while the connection is
/// idle in the pool, and released when curl closes the socket (CURLOPT_CLOSESOCKETFUNCTION), never left on
/// a closed descriptor until its number comes back.
@Suite("HTTPClient: watches on curl's sockets")
struct HTTPClientSocketWatchTests {
    private static func watched(_ client: HTTPClient) throws -> [Int32] {
        try client.loop.invokeAndWait { client.engine.watchedDescriptors }
    }

    @Test func noWatchIsLeftOnTheSocketsOfConnectionsTheServerClosed() async throws {
        let peer = try PeerServer("serve")
        let loop = try ClientLoop()
        let client = loop.client()
        for _ in 0..<8 {
            // `Connection: close`: curl closes the connection once the response has arrived.
            #expect(try await text(client.execute(peer.request("/close"))) == "closing")
        }
        #expect(try Self.watched(client) == [])
    }

    @Test func anIdlePooledConnectionKeepsItsWatchPausedOnAnOpenSocket() async throws {
        let peer = try PeerServer("serve")
        let loop = try ClientLoop()
        let client = loop.client()
        for _ in 0..<4 {
            #expect(try await text(client.execute(peer.request("/hello"))) == "hello from connection 1")
        }
        let watched = try Self.watched(client)
        #expect(watched.count == 1)
        #expect(watched.allSatisfy { fcntl($0, F_GETFD) != -1 })
    }

    @Test func aClosedConnectionsWatchGoesWhileAPooledOneStays() async throws {
        let peer = try PeerServer("serve")
        let loop = try ClientLoop()
        let client = loop.client()
        #expect(try await text(client.execute(peer.request("/hello"))) == "hello from connection 1")
        let pooled = try Self.watched(client)
        #expect(pooled.count == 1)
        // The pooled connection carries this one too, and the server closes it after answering.
        #expect(try await text(client.execute(peer.request("/close"))) == "closing")
        #expect(try Self.watched(client) == [])
        #expect(try await text(client.execute(peer.request("/hello"))) == "hello from connection 2")
        #expect(try Self.watched(client).count == 1)
    }
}
