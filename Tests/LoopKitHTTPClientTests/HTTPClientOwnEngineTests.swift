import HTTPTypes
import LoopKit
import LoopKitHTTPClient
import LoopKitNet
import Testing

/// A configuration whose requests the own HTTP/1.1 engine sends (plain http, no decoding).
func ownEngineConfiguration() -> HTTPClient.Configuration {
    var configuration = HTTPClient.Configuration()
    configuration.engine = .automatic
    configuration.decompression = .disabled
    return configuration
}

@Suite("HTTPClient: the own HTTP/1.1 engine")
struct HTTPClientOwnEngineTests {
    @Test func getReturnsStatusFieldsAndBodyFromALoopKitServer() async throws {
        let server = try LiveServer()
        let loop = try ClientLoop()
        let response = try await loop.client(ownEngineConfiguration()).execute(server.request("/hello"))
        #expect(response.head.status == .ok)
        #expect(response.head.status.reasonPhrase == "OK")
        #expect(response.head.headerFields[.contentType] == "text/plain")
        #expect(response.httpVersion == 11)
        #expect(try await text(response) == "Hello, World!")
    }

    @Test func keepAliveRequestsReuseOneConnection() async throws {
        let peer = try PeerServer("serve")
        let loop = try ClientLoop()
        let client = loop.client(ownEngineConfiguration())
        for _ in 0..<3 { #expect(try await text(client.execute(peer.request("/hello"))) == "hello from connection 1") }
        #expect(try await text(client.execute(peer.request("/connections"))) == "1")
    }

    @Test func aContentLengthBodyIsSentAndReadWhole() async throws {
        let server = try LiveServer()
        let loop = try ClientLoop()
        let payload = Bytes((0..<300_000).map { UInt8($0 % 251) })
        let response = try await loop.client(ownEngineConfiguration()).execute(server.request("/echo", method: .post), body: .bytes(payload))
        #expect(response.head.status == .ok)
        #expect(try await response.collect(upTo: 1 << 20) == payload)
    }

    @Test func aChunkedBodyIsDecodedFromALoopKitServer() async throws {
        let server = try LiveServer()
        let loop = try ClientLoop()
        let client = loop.client(ownEngineConfiguration())
        let expected = (0..<50).map { "part \($0);" }.joined()
        #expect(try await text(client.execute(server.request("/chunked"))) == expected)
        #expect(try await text(client.execute(server.request("/hello"))) == "Hello, World!")  // the same connection, after it
    }

    @Test func chunkExtensionsAndTrailersAreSkipped() async throws {
        let peer = try PeerServer("serve")
        let loop = try ClientLoop()
        let client = loop.client(ownEngineConfiguration())
        #expect(try await text(client.execute(peer.request("/chunked"))) == "hello 0123456789")
        #expect(try await text(client.execute(peer.request("/hello"))) == "hello from connection 1")
    }

    @Test func aBodyWithoutLengthIsReadToTheConnectionsEnd() async throws {
        let peer = try PeerServer("serve")
        let loop = try ClientLoop()
        let client = loop.client(ownEngineConfiguration())
        #expect(try await text(client.execute(peer.request("/untilclose"))) == "read to the end")
        #expect(try await text(client.execute(peer.request("/hello"))) == "hello from connection 2")
    }

    @Test func aRequestSayingConnectionCloseIsNotFollowedOnItsConnection() async throws {
        let peer = try PeerServer("serve")
        let loop = try ClientLoop()
        let client = loop.client(ownEngineConfiguration())
        #expect(try await text(client.execute(peer.request("/hello", fields: [.connection: "close"]))) == "hello from connection 1")
        #expect(try await text(client.execute(peer.request("/hello"))) == "hello from connection 2")
    }

    @Test func aHeadResponseHasNoBody() async throws {
        let peer = try PeerServer("serve")
        let loop = try ClientLoop()
        let client = loop.client(ownEngineConfiguration())
        let response = try await client.execute(peer.request("/hello", method: .head))
        #expect(response.head.headerFields[.contentLength] == "23")
        #expect(try await text(response) == "")
        #expect(try await text(client.execute(peer.request("/hello"))) == "hello from connection 1")
    }

    @Test func aRequestOnAReusedConnectionTheServerClosedIsRetriedOnceOnANewOne() async throws {
        let peer = try PeerServer("drop-reused")
        let loop = try ClientLoop()
        let client = loop.client(ownEngineConfiguration())
        #expect(try await text(client.execute(peer.request("/hello"))) == "hello from connection 1")
        #expect(try await text(client.execute(peer.request("/hello"))) == "hello from connection 2")
        // A bytes body goes again too (PUT is idempotent).
        let response = try await client.execute(peer.request("/echo", method: .put), body: .bytes(Bytes("again")))
        #expect(try await text(response) == "again")
    }

    @Test func aPostIsNotRetried() async throws {
        let peer = try PeerServer("drop-reused")
        let loop = try ClientLoop()
        let client = loop.client(ownEngineConfiguration())
        _ = try await text(client.execute(peer.request("/hello")))
        let error = await #expect(throws: HTTPClientError.self) {
            try await client.execute(peer.request("/echo", method: .post), body: .bytes(Bytes("once")))
        }
        #expect(error?.kind == .transport)
    }

    @Test func aRequestPastItsDeadlineFails() async throws {
        let peer = try PeerServer("serve")
        let loop = try ClientLoop()
        let error = await #expect(throws: HTTPClientError.self) {
            try await loop.client(ownEngineConfiguration()).execute(peer.request("/slow?30"), deadline: .now + .milliseconds(200))
        }
        #expect(error?.kind == .deadlineExceeded)
        #expect(error?.curlCode == nil)
    }

    @Test func theConfiguredRequestTimeoutApplies() async throws {
        let peer = try PeerServer("serve")
        let loop = try ClientLoop()
        var configuration = ownEngineConfiguration()
        configuration.requestTimeout = .milliseconds(200)
        let error = await #expect(throws: HTTPClientError.self) { try await loop.client(configuration).execute(peer.request("/slow?30")) }
        #expect(error?.kind == .deadlineExceeded)
    }

    @Test func aMalformedResponseHeadIsATransportError() async throws {
        let peer = try PeerServer("serve")
        let loop = try ClientLoop()
        let client = loop.client(ownEngineConfiguration())
        let error = await #expect(throws: HTTPClientError.self) { try await client.execute(peer.request("/malformed")) }
        #expect(error?.kind == .transport)
        #expect(error?.message.contains("malformed response status line") == true)
        #expect(try await text(client.execute(peer.request("/hello"))) == "hello from connection 2")
    }

    @Test func aBodyLargerThanTheHighWaterMarkPausesReadingThenIsReadWhole() async throws {
        let peer = try PeerServer("serve")
        let loop = try ClientLoop()
        var configuration = ownEngineConfiguration()
        configuration.bodyHighWaterMark = 256 * 1024
        configuration.bodyLowWaterMark = 64 * 1024
        let client = loop.client(configuration)
        let total = 64 << 20
        let response = try await client.execute(peer.request("/big?\(total)"))
        // Nothing read: the connection stops reading at the high water mark, the kernel's buffers fill, and
        // the server's sends find the socket not writable.
        #expect(try await eventually { try await text(client.execute(peer.request("/stalled"))) == "yes" })
        var count = 0
        for try await chunk in response.body { count += chunk.count }
        #expect(count == total)
    }

    @Test func droppingTheBodyUnreadClosesItsConnection() async throws {
        let peer = try PeerServer("serve")
        let loop = try ClientLoop()
        var configuration = ownEngineConfiguration()
        configuration.maximumConnectionsPerHost = 1
        let client = loop.client(configuration)
        do {
            let response = try await client.execute(peer.request("/big?\(256 << 20)"))
            _ = response.head
        }
        #expect(try await text(client.execute(peer.request("/hello"))) == "hello from connection 2")
    }

    @Test func cancellingTheAwaitingTaskEndsTheRequest() async throws {
        let peer = try PeerServer("serve")
        let loop = try ClientLoop()
        let client = loop.client(ownEngineConfiguration())
        let request = peer.request("/slow?30")
        let task = Task { try await client.execute(request) }
        try await eventually { try await text(client.execute(peer.request("/slowcount"))) == "1" }
        task.cancel()
        let error = await #expect(throws: HTTPClientError.self) { try await task.value }
        #expect(error?.kind == .cancelled)
    }

    @Test func requestsBeyondTheConnectionLimitWaitForAConnection() async throws {
        let peer = try PeerServer("serve")
        let loop = try ClientLoop()
        var configuration = ownEngineConfiguration()
        configuration.maximumConnectionsPerHost = 2
        let client = loop.client(configuration)
        let request = peer.request("/hello")
        let bodies = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<20 { group.addTask { try await text(client.execute(request)) } }
            return try await group.reduce(into: [String]()) { $0.append($1) }
        }
        #expect(bodies.count == 20)
        #expect(Set(bodies).isSubset(of: ["hello from connection 1", "hello from connection 2"]))
        #expect(try await text(client.execute(peer.request("/connections"))) == "2")
    }

    @Test func sixtyFourConcurrentRequestsAllComplete() async throws {
        let server = try LiveServer()
        let loop = try ClientLoop()
        let client = loop.client(ownEngineConfiguration())
        let request = server.request("/hello")
        let bodies = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<64 { group.addTask { try await text(client.execute(request)) } }
            return try await group.reduce(into: [String]()) { $0.append($1) }
        }
        #expect(bodies.count == 64)
        #expect(bodies.allSatisfy { $0 == "Hello, World!" })
    }

    @Test func redirectsAreFollowedUpToTheLimit() async throws {
        let peer = try PeerServer("serve")
        let loop = try ClientLoop()
        var configuration = ownEngineConfiguration()
        configuration.redirects = .follow(maximum: 3)
        let client = loop.client(configuration)
        #expect(try await text(client.execute(peer.request("/redirect/3"))) == "arrived")
        let error = await #expect(throws: HTTPClientError.self) { try await client.execute(peer.request("/redirect/4")) }
        #expect(error?.kind == .tooManyRedirects)
    }

    @Test func credentialsAreNotSentToAnotherHost() async throws {
        let peer = try PeerServer("serve")
        let loop = try ClientLoop()
        var configuration = ownEngineConfiguration()
        configuration.redirects = .follow(maximum: 3)
        let client = loop.client(configuration)
        let request = peer.request("/cross?http://localhost:\(peer.port)", fields: [.authorization: "Bearer secret"])
        #expect(try await text(client.execute(request)) == "none")
    }

    @Test func aRefusedConnectIsConnectFailedWithoutACurlCode() async throws {
        let peer = try PeerServer("serve")
        let port = peer.port
        _ = consume peer  // stopped: nothing listens on its port any more
        let loop = try ClientLoop()
        let error = await #expect(throws: HTTPClientError.self) {
            try await loop.client(ownEngineConfiguration()).execute(HTTPRequest(method: .get, scheme: "http", authority: "127.0.0.1:\(port)", path: "/"))
        }
        #expect(error?.kind == .connectFailed)
        #expect(error?.curlCode == nil)
    }

    @Test func aStreamedBodyGoesThroughCurl() async throws {
        let server = try LiveServer()
        let loop = try ClientLoop()
        let stream = AsyncStream<Bytes> { continuation in
            continuation.yield(Bytes("streamed"))
            continuation.finish()
        }
        let response = try await loop.client(ownEngineConfiguration()).execute(server.request("/echo", method: .put), body: .stream(stream))
        #expect(try await text(response) == "streamed")
    }
}
