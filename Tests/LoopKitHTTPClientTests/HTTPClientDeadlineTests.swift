import LoopKitHTTPClient
import Testing

@Suite("HTTPClient: deadlines and cancellation")
struct HTTPClientDeadlineTests {
    @Test func aRequestPastItsDeadlineFails() async throws {
        let peer = try PeerServer("serve")
        let loop = try ClientLoop()
        let error = await #expect(throws: HTTPClientError.self) {
            try await loop.client().execute(peer.request("/slow?30"), deadline: .now + .milliseconds(200))
        }
        #expect(error?.kind == .deadlineExceeded)
        #expect(error?.curlCode == 28)
    }

    @Test func theConfiguredRequestTimeoutApplies() async throws {
        let peer = try PeerServer("serve")
        let loop = try ClientLoop()
        var configuration = HTTPClient.Configuration()
        configuration.requestTimeout = .milliseconds(200)
        let error = await #expect(throws: HTTPClientError.self) {
            try await loop.client(configuration).execute(peer.request("/slow?30"))
        }
        #expect(error?.kind == .deadlineExceeded)
    }

    @Test func aDeadlineAlreadyPassedFailsWithoutSending() async throws {
        let peer = try PeerServer("serve")
        let loop = try ClientLoop()
        let client = loop.client()
        let error = await #expect(throws: HTTPClientError.self) {
            try await client.execute(peer.request("/hello"), deadline: .now - .seconds(1))
        }
        #expect(error?.kind == .deadlineExceeded)
        #expect(try await text(client.execute(peer.request("/connections"))) == "1")
    }

    @Test func cancellingTheAwaitingTaskEndsTheRequest() async throws {
        let peer = try PeerServer("serve")
        let loop = try ClientLoop()
        let client = loop.client()
        let request = peer.request("/slow?30")
        let task = Task { try await client.execute(request) }
        // Cancelled once the server has the connection (it answers only after 30 s).
        try await eventually { try await text(client.execute(peer.request("/slowcount"))) == "1" }
        task.cancel()
        let error = await #expect(throws: HTTPClientError.self) { try await task.value }
        #expect(error?.kind == .cancelled)
    }

    @Test func cancellingTheReadingTaskEndsTheBodysRead() async throws {
        let peer = try PeerServer("serve")
        let loop = try ClientLoop()
        let client = loop.client()
        let response = try await client.execute(peer.request("/big?\(64 << 20)"))
        let reader = Task {
            var count = 0
            for try await chunk in response.body {
                count += chunk.count
                if count > 1 << 20 { withUnsafeCurrentTask { $0?.cancel() } }
            }
            return count
        }
        let error = await #expect(throws: HTTPClientError.self) { try await reader.value }
        #expect(error?.kind == .cancelled)
    }
}
