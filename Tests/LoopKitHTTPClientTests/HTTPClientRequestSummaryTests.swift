import HTTPTypes
import LoopKitHTTPClient
import LoopKitNet
import Synchronization
import Testing

/// What ``HTTPClient/Configuration/requestEnded`` is told: once per request, when it has ended.
@Suite("HTTPClient: request summaries")
struct HTTPClientRequestSummaryTests {
    /// A configuration whose summaries are kept in `told`.
    private static func observed(_ told: Told) -> HTTPClient.Configuration {
        var configuration = HTTPClient.Configuration()
        configuration.requestEnded = { summary in told.list.withLock { $0.append(summary) } }
        return configuration
    }

    final class Told: Sendable {
        let list = Mutex<[HTTPClientRequestSummary]>([])
        func withLock<T: Sendable>(_ body: (inout [HTTPClientRequestSummary]) -> T) -> T { list.withLock { body(&$0) } }
    }

    @Test func aRequestIsSummarizedOnceWithItsStatusAndBodySizes() async throws {
        let told = Told()
        let peer = try PeerServer("serve")
        let loop = try ClientLoop()
        let client = loop.client(Self.observed(told))
        let response = try await client.execute(peer.request("/echo", method: .post), body: .bytes(Bytes("twelve bytes")))
        #expect(try await text(response) == "twelve bytes")
        let summaries = told.withLock { $0 }
        #expect(summaries.count == 1)
        let summary = try #require(summaries.first)
        #expect(summary.method == .post)
        #expect(summary.authority == "127.0.0.1:\(peer.port)")
        #expect(summary.status == .ok)
        #expect(summary.error == nil)
        #expect(summary.requestBodyBytes == 12)
        #expect(summary.responseBodyBytes == 12)
        #expect(summary.wasSent)
        #expect(summary.connectionsOpened == 1)
        #expect(!summary.reusedConnection)
        #expect(summary.retries == 0)
        #expect(summary.duration > .zero)
    }

    @Test func aPooledConnectionIsReportedReused() async throws {
        let told = Told()
        let peer = try PeerServer("serve")
        let loop = try ClientLoop()
        let client = loop.client(Self.observed(told))
        _ = try await text(client.execute(peer.request("/hello")))
        _ = try await text(client.execute(peer.request("/hello")))
        #expect(told.withLock { $0.map(\.connectionsOpened) } == [1, 0])
        #expect(told.withLock { $0.map(\.reusedConnection) } == [false, true])
    }

    @Test func redirectsAreCountedAndNotTakenForRetries() async throws {
        let told = Told()
        let peer = try PeerServer("serve")
        let loop = try ClientLoop()
        let client = loop.client(Self.observed(told))
        #expect(try await text(client.execute(peer.request("/redirect/3"))) == "arrived")
        let summary = try #require(told.withLock { $0.first })
        #expect(summary.redirects == 3)
        #expect(summary.retries == 0)
        #expect(summary.status == .ok)
    }

    @Test func aRequestSentAgainOnANewConnectionCountsARetry() async throws {
        let told = Told()
        let peer = try PeerServer("drop-reused")
        let loop = try ClientLoop()
        let client = loop.client(Self.observed(told))
        _ = try await text(client.execute(peer.request("/hello")))
        #expect(try await text(client.execute(peer.request("/hello"))) == "hello from connection 2")
        let summaries = told.withLock { $0 }
        #expect(summaries.map(\.retries) == [0, 1])
        #expect(summaries.last?.connectionsOpened == 1)
    }

    @Test func aRefusedConnectIsSummarizedWithItsKindAndNoStatus() async throws {
        let told = Told()
        let port = try PeerServer("serve").port  // stopped once this line is done: nothing listens there
        let loop = try ClientLoop()
        let client = loop.client(Self.observed(told))
        await #expect(throws: HTTPClientError.self) {
            try await client.execute(HTTPRequest(method: .get, scheme: "http", authority: "127.0.0.1:\(port)", path: "/"))
        }
        let summaries = told.withLock { $0 }
        #expect(summaries.count == 1)
        #expect(summaries.first?.error?.kind == .connectFailed)
        #expect(summaries.first?.status == nil)
        #expect(summaries.first?.wasSent == false)
    }

    @Test func aRequestThatCannotStartIsSummarizedOnce() async throws {
        let told = Told()
        let loop = try ClientLoop()
        let client = loop.client(Self.observed(told))
        await #expect(throws: HTTPClientError.self) {
            try await client.execute(HTTPRequest(method: .get, scheme: "http", authority: nil, path: "/"))
        }
        #expect(told.withLock { $0.map(\.error?.kind) } == [.invalidRequest])
    }

    @Test func aBodyDroppedUnreadIsSummarizedAsCancelledWithItsStatus() async throws {
        let told = Told()
        let peer = try PeerServer("serve")
        let loop = try ClientLoop()
        let client = loop.client(Self.observed(told))
        do {
            let response = try await client.execute(peer.request("/big?67108864"))
            #expect(response.head.status == .ok)
        }
        try await eventually { told.withLock { !$0.isEmpty } }
        let summary = try #require(told.withLock { $0.first })
        #expect(summary.status == .ok)
        #expect(summary.error?.kind == .cancelled)
        #expect(told.withLock { $0.count } == 1)
    }

    @Test func aRequestEndedByTheClientsShutdownIsSummarizedOnce() async throws {
        let told = Told()
        let peer = try PeerServer("serve")
        let loop = try ClientLoop()
        let client = loop.client(Self.observed(told))
        let request = peer.request("/slow?5")
        let slow = Task { try await client.execute(request) }
        // The server has the request: it is in flight when the client shuts down.
        let probe = loop.client()
        try await eventually { try await text(probe.execute(peer.request("/slowcount"))) == "1" }
        client.shutdown()
        await #expect(throws: HTTPClientError.self) { try await slow.value }
        #expect(told.withLock { $0.map(\.error?.kind) } == [.shutDown])
        #expect(told.withLock { $0.first?.wasSent } == true)
        #expect(told.withLock { $0.first?.status } == nil)
    }
}
