import HTTPTypes
import LoopKitHTTPClient
import LoopKitNet
import Testing

/// A finished transfer's curl handle carries the next request: nothing of the last request may stay on it.
/// One connection per host and one request at a time, so every request here reuses the first one's handle.
@Suite("HTTPClient: a handle reused for the next request")
struct HTTPClientHandleReuseTests {
    private static func oneAtATime() -> HTTPClient.Configuration {
        var configuration = HTTPClient.Configuration()
        configuration.maximumConnectionsPerHost = 1
        return configuration
    }

    private static let method = HTTPField.Name("X-Method")!

    @Test func aGetAfterAPostSendsNoBody() async throws {
        let peer = try PeerServer("serve")
        let loop = try ClientLoop()
        let client = loop.client(Self.oneAtATime())
        let posted = try await client.execute(peer.request("/echo", method: .post), body: .bytes(Bytes("a body")))
        #expect(posted.head.headerFields[Self.method] == "POST")
        #expect(try await text(posted) == "a body")
        let got = try await client.execute(peer.request("/echo"))
        #expect(got.head.headerFields[Self.method] == "GET")
        #expect(try await text(got) == "")
    }

    @Test func aGetAfterAHeadGetsItsBody() async throws {
        let peer = try PeerServer("serve")
        let loop = try ClientLoop()
        let client = loop.client(Self.oneAtATime())
        let headed = try await client.execute(peer.request("/hello", method: .head))
        #expect(headed.head.status == .ok)
        #expect(try await text(headed) == "")
        #expect(try await text(client.execute(peer.request("/hello"))) == "hello from connection 1")
    }

    @Test func aBodilessCustomMethodAfterAPutIsSentAsItself() async throws {
        let peer = try PeerServer("serve")
        let loop = try ClientLoop()
        let client = loop.client(Self.oneAtATime())
        let put = try await client.execute(peer.request("/echo", method: .put), body: .bytes(Bytes("put")))
        #expect(put.head.headerFields[Self.method] == "PUT")
        _ = try await text(put)
        let deleted = try await client.execute(peer.request("/echo", method: .delete))
        #expect(deleted.head.headerFields[Self.method] == "DELETE")
        #expect(try await text(deleted) == "")
    }

    @Test func anEarlierRequestsDeadlineIsNotKept() async throws {
        let peer = try PeerServer("serve")
        let loop = try ClientLoop()
        let client = loop.client(Self.oneAtATime())
        _ = try await text(client.execute(peer.request("/hello"), deadline: .now + .seconds(2)))
        // Longer than the first request's deadline: it would fail if that deadline had stayed on the handle.
        #expect(try await text(client.execute(peer.request("/slow?3"))) == "slow")
    }

    private static let contentLength = HTTPField.Name("X-Content-Length")!

    @Test func aGetAfterAPostRedirectedBy303SendsNoBodyNorContentLength() async throws {
        let peer = try PeerServer("serve")
        let loop = try ClientLoop()
        let client = loop.client(Self.oneAtATime())
        // curl follows the 303 with a GET of /echo, on the handle that carried the POST.
        let redirected = try await client.execute(peer.request("/see-other", method: .post), body: .bytes(Bytes("a body")))
        #expect(redirected.head.headerFields[Self.method] == "GET")
        #expect(redirected.head.headerFields[Self.contentLength] == "none")
        #expect(try await text(redirected) == "")
        let got = try await client.execute(peer.request("/echo"))
        #expect(got.head.headerFields[Self.method] == "GET")
        #expect(got.head.headerFields[Self.contentLength] == "none")
        #expect(try await text(got) == "")
        // And the handle still posts.
        let posted = try await client.execute(peer.request("/echo", method: .post), body: .bytes(Bytes("again")))
        #expect(posted.head.headerFields[Self.contentLength] == "5")
        #expect(try await text(posted) == "again")
    }

    @Test func anHTTP1RequestToAnotherHostAfterAnHTTP2Transfer() async throws {
        let h2 = try LiveServer(tls: true)
        let peer = try PeerServer("serve")
        let loop = try ClientLoop()
        var configuration = Self.oneAtATime()
        configuration.tls.caFile = ClientCertificates.shared.caPEM
        let client = loop.client(configuration)
        let first = try await client.execute(h2.request("/hello", scheme: "https", host: "localhost"))
        #expect(first.httpVersion == 20)
        #expect(try await text(first) == "Hello, World!")
        let second = try await client.execute(peer.request("/echo", method: .post), body: .bytes(Bytes("over 1.1")))
        #expect(second.httpVersion == 11)
        #expect(second.head.headerFields[Self.method] == "POST")
        #expect(try await text(second) == "over 1.1")
        let third = try await client.execute(peer.request("/hello"))
        #expect(third.httpVersion == 11)
        #expect(try await text(third) == "hello from connection 1")
    }

    @Test func fieldsOfAnEarlierRequestAreNotSentAgain() async throws {
        let server = try LiveServer()
        let loop = try ClientLoop()
        let client = loop.client(Self.oneAtATime())
        let probe = HTTPField.Name("X-Probe")!
        #expect(try await text(client.execute(server.request("/fields", fields: [probe: "1"]))).contains("x-probe=1"))
        #expect(try await !text(client.execute(server.request("/fields"))).contains("x-probe"))
    }
}
