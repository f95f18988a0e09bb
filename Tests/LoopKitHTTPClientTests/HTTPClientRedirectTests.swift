import HTTPTypes
import LoopKitHTTPClient
import Testing

@Suite("HTTPClient: redirects")
struct HTTPClientRedirectTests {
    @Test func aChainWithinTheLimitIsFollowed() async throws {
        let peer = try PeerServer("serve")
        let loop = try ClientLoop()
        let response = try await loop.client().execute(peer.request("/redirect/3"))
        #expect(response.head.status == .ok)
        #expect(try await text(response) == "arrived")
    }

    @Test func oneRedirectPastTheLimitFails() async throws {
        let peer = try PeerServer("serve")
        let loop = try ClientLoop()
        var configuration = HTTPClient.Configuration()
        configuration.redirects = .follow(maximum: 2)
        let error = await #expect(throws: HTTPClientError.self) {
            try await loop.client(configuration).execute(peer.request("/redirect/3"))
        }
        #expect(error?.kind == .tooManyRedirects)
    }

    @Test func disallowedRedirectIsTheResponse() async throws {
        let peer = try PeerServer("serve")
        let loop = try ClientLoop()
        var configuration = HTTPClient.Configuration()
        configuration.redirects = .disallow
        let response = try await loop.client(configuration).execute(peer.request("/redirect/1"))
        #expect(response.head.status.code == 302)
        #expect(response.head.headerFields[.location] == "/redirect/0")
    }

    @Test func authorizationIsNotSentToAnotherHost() async throws {
        let peer = try PeerServer("serve")
        let loop = try ClientLoop()
        // 127.0.0.1 redirects to localhost: the same server under another host name.
        let request = peer.request("/cross?http://localhost:\(peer.port)", fields: [.authorization: "Bearer secret"])
        #expect(try await text(loop.client().execute(request)) == "none")
    }

    @Test func authorizationIsKeptOnTheSameHost() async throws {
        let peer = try PeerServer("serve")
        let loop = try ClientLoop()
        let request = peer.request("/cross?http://127.0.0.1:\(peer.port)", fields: [.authorization: "Bearer secret"])
        #expect(try await text(loop.client().execute(request)) == "Bearer secret")
    }
}
