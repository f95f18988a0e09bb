import HTTPTypes
import LoopKitHTTPClient
import Testing

/// The head built from curl's header lines: status, reason and fields as the server sent them.
@Suite("HTTPClient: the response head")
struct HTTPClientResponseHeadTests {
    @Test func statusAndReasonAreTheServers() async throws {
        let peer = try PeerServer("serve")
        let loop = try ClientLoop()
        let response = try await loop.client().execute(peer.request("/head"))
        #expect(response.head.status.code == 299)
        #expect(response.head.status.reasonPhrase == "Custom Reason")
        #expect(try await text(response) == "ok")
    }

    @Test func fieldsKeepTheirOrderAndValuesTrimmed() async throws {
        let peer = try PeerServer("serve")
        let loop = try ClientLoop()
        let fields = try await loop.client().execute(peer.request("/head")).head.headerFields
        #expect(fields.map(\.name.canonicalName) == ["content-length", "x-lower", "x-spaced", "set-cookie", "set-cookie", "x-utf8"])
        #expect(fields[HTTPField.Name("X-Lower")!] == "v")
        #expect(fields[HTTPField.Name("x-spaced")!] == "padded value")
        #expect(fields[values: .setCookie] == ["a=1", "b=2"])
        #expect(fields[.contentLength] == "2")
    }

    @Test func aValueBeyondASCIIIsKeptAsSent() async throws {
        let peer = try PeerServer("serve")
        let loop = try ClientLoop()
        let fields = try await loop.client().execute(peer.request("/head")).head.headerFields
        #expect(fields[HTTPField.Name("X-Utf8")!] == "café")
    }

    @Test func aLineWhoseNameIsNotATokenIsLeftOut() async throws {
        let peer = try PeerServer("serve")
        let loop = try ClientLoop()
        let fields = try await loop.client().execute(peer.request("/head")).head.headerFields
        #expect(!fields.contains { $0.value == "dropped" })
    }
}
