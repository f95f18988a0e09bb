import LoopKitHTTPClient
import Testing

@Suite("HTTPClient: proxies")
struct HTTPClientProxyTests {
    @Test func aConnectProxyTunnelsToANameOnlyItResolves() async throws {
        let server = try LiveServer()
        let proxy = try PeerServer("proxy")
        let loop = try ClientLoop()
        var configuration = HTTPClient.Configuration()
        configuration.proxy = .init(url: "http://127.0.0.1:\(proxy.port)", tunnelsPlainHTTP: true)
        let request = server.request("/hello")
        var tunnelled = request
        tunnelled.authority = "service.invalid:\(server.port)"
        #expect(try await text(loop.client(configuration).execute(tunnelled)) == "Hello, World!")
    }

    @Test func withoutTheProxyTheNameDoesNotResolve() async throws {
        let loop = try ClientLoop()
        let error = await #expect(throws: HTTPClientError.self) {
            try await loop.client().execute(.init(method: .get, scheme: "http", authority: "service.invalid:80", path: "/"))
        }
        #expect(error?.kind == .connectFailed)
    }

    @Test func anUnreachableProxyIsAConnectFailure() async throws {
        let loop = try ClientLoop()
        var configuration = HTTPClient.Configuration()
        configuration.proxy = .init(url: "http://127.0.0.1:1", tunnelsPlainHTTP: true)
        let error = await #expect(throws: HTTPClientError.self) {
            try await loop.client(configuration).execute(.init(method: .get, scheme: "http", authority: "service.invalid:80", path: "/"))
        }
        #expect(error?.kind == .connectFailed)
    }
}
