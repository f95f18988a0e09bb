import LoopKitHTTPClient
import Testing

@Suite("HTTPClient: decoding and its limits")
struct HTTPClientDecompressionTests {
    @Test func gzipBodyIsDecoded() async throws {
        let peer = try PeerServer("serve")
        let loop = try ClientLoop()
        let response = try await loop.client().execute(peer.request("/gzip"))
        #expect(response.head.headerFields[.contentEncoding] == "gzip")
        #expect(try await text(response) == String(repeating: "compressed hello ", count: 1000))
    }

    @Test func brotliBodyIsDecoded() async throws {
        let peer = try PeerServer("serve")
        let loop = try ClientLoop()
        let response = try await loop.client().execute(peer.request("/br"))
        #expect(response.head.headerFields[.contentEncoding] == "br")
        #expect(try await text(response) == String(repeating: "brotli hello ", count: 1000))
    }

    @Test func disabledDecodingGivesTheBytesAsSent() async throws {
        let peer = try PeerServer("serve")
        let loop = try ClientLoop()
        var configuration = HTTPClient.Configuration()
        configuration.decompression = .disabled
        let body = try await loop.client(configuration).execute(peer.request("/gzip")).collect(upTo: 1 << 20)
        #expect(Array(body.prefix(2)) == [0x1f, 0x8b])
    }

    @Test func aBombIsRefusedAtTheSizeLimit() async throws {
        let peer = try PeerServer("serve")
        let loop = try ClientLoop()
        var configuration = HTTPClient.Configuration()
        configuration.decompression = .enabled(maximumSize: 4 << 20, maximumRatio: 100_000)
        let error = await #expect(throws: HTTPClientError.self) {
            _ = try await loop.client(configuration).execute(peer.request("/bomb")).collect(upTo: 64 << 20)
        }
        #expect(error?.kind == .decompressionLimitExceeded)
        #expect(error?.message.contains("more than 4194304 bytes") == true)
    }

    @Test func aBombIsRefusedAtTheRatioLimit() async throws {
        let peer = try PeerServer("serve")
        let loop = try ClientLoop()
        var configuration = HTTPClient.Configuration()
        configuration.decompression = .enabled(maximumSize: 1 << 30, maximumRatio: 100)
        let error = await #expect(throws: HTTPClientError.self) {
            _ = try await loop.client(configuration).execute(peer.request("/bomb")).collect(upTo: 64 << 20)
        }
        #expect(error?.kind == .decompressionLimitExceeded)
        #expect(error?.message.contains("100 times") == true)
    }

    @Test func aBodySentWithoutEncodingIsNotHeldToTheDecodingLimits() async throws {
        let peer = try PeerServer("serve")
        let loop = try ClientLoop()
        var configuration = HTTPClient.Configuration()
        configuration.decompression = .enabled(maximumSize: 1 << 20, maximumRatio: 100)
        let body = try await loop.client(configuration).execute(peer.request("/big?\(4 << 20)")).collect(upTo: 8 << 20)
        #expect(body.count == 4 << 20)
    }
}
