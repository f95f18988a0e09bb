import HTTPTypes
import LoopKit
import LoopKitHTTPClient
import Synchronization
import Testing

@Suite("HTTPClient: shutdown, deinit and the loop's shutdown")
struct HTTPClientLifecycleTests {
    @Test func shutdownEndsARequestInFlight() async throws {
        let peer = try PeerServer("serve")
        let loop = try ClientLoop()
        let client = loop.client()
        let request = peer.request("/slow?30")
        let task = Task { try await client.execute(request) }
        try await eventually { try await text(loop.client().execute(peer.request("/slowcount"))) == "1" }
        client.shutdown()
        let error = await #expect(throws: HTTPClientError.self) { try await task.value }
        #expect(error?.kind == .shutDown)
    }

    @Test func aRequestAfterShutdownFails() async throws {
        let peer = try PeerServer("serve")
        let loop = try ClientLoop()
        let client = loop.client()
        _ = try await text(client.execute(peer.request("/hello")))
        client.shutdown()
        let error = await #expect(throws: HTTPClientError.self) { try await client.execute(peer.request("/hello")) }
        #expect(error?.kind == .shutDown)
    }

    @Test func droppingTheClientWithoutShutdownEndsItsRequestsOnce() async throws {
        let peer = try PeerServer("serve")
        let loop = try ClientLoop()
        let request = peer.request("/slow?30")
        let told = Mutex<[HTTPClientError.Kind]>([])
        try loop.loop.invokeAndWait {
            let client = HTTPClient(on: loop.loop)
            _ = client.execute(request) { result in
                if case .failure(let error) = result { told.withLock { $0.append(error.kind) } }
            }
        }
        #expect(try await eventually { told.withLock { !$0.isEmpty } })
        try await loop.loop.perform {}
        #expect(told.withLock { $0 } == [.shutDown])
    }

    @Test func theLoopsShutdownEndsARequestInFlight() async throws {
        let peer = try PeerServer("serve")
        let group = try LoopGroup(threads: 1, name: "client-shutdown-test")
        let client = HTTPClient(on: group.loops[0])
        let request = peer.request("/slow?30")
        let task = Task { try await client.execute(request) }
        let probe = try ClientLoop()
        try await eventually { try await text(probe.client().execute(peer.request("/slowcount"))) == "1" }
        group.shutdown()
        let error = await #expect(throws: HTTPClientError.self) { try await task.value }
        #expect(error?.kind == .shutDown)
    }
}
