import LoopKitHTTPClient
import Testing

@Suite("HTTPClient: TLS verification")
struct HTTPClientTLSTests {
    private func tlsPeer(right: Bool) throws -> PeerServer {
        let certificates = ClientCertificates.shared
        return right
            ? try PeerServer("tls", [certificates.rightPEM, certificates.rightKey])
            : try PeerServer("tls", [certificates.wrongPEM, certificates.wrongKey])
    }

    private func trusting() -> HTTPClient.Configuration {
        var configuration = HTTPClient.Configuration()
        configuration.tls.caFile = ClientCertificates.shared.caPEM
        return configuration
    }

    @Test func aCertificateForTheNameFromTheTrustedCAIsAccepted() async throws {
        let peer = try tlsPeer(right: true)
        let loop = try ClientLoop()
        let response = try await loop.client(trusting()).execute(peer.request("/hello", scheme: "https", host: "localhost"))
        #expect(try await text(response) == "hello from connection 1")
    }

    @Test func aCertificateForAnotherNameIsRefused() async throws {
        let peer = try tlsPeer(right: false)
        let loop = try ClientLoop()
        let error = await #expect(throws: HTTPClientError.self) {
            try await loop.client(trusting()).execute(peer.request("/hello", scheme: "https", host: "localhost"))
        }
        #expect(error?.kind == .tls)
    }

    @Test func aCertificateFromAnUnknownCAIsRefusedByDefault() async throws {
        let peer = try tlsPeer(right: true)
        let loop = try ClientLoop()
        let error = await #expect(throws: HTTPClientError.self) {
            try await loop.client().execute(peer.request("/hello", scheme: "https", host: "localhost"))
        }
        #expect(error?.kind == .tls)
    }

    @Test func skippingVerificationByItsUnsafeNameAcceptsAnyCertificate() async throws {
        let peer = try tlsPeer(right: false)
        let loop = try ClientLoop()
        var configuration = HTTPClient.Configuration()
        configuration.tls.unsafeSkipsCertificateVerification = true
        let response = try await loop.client(configuration).execute(peer.request("/hello", scheme: "https", host: "localhost"))
        #expect(response.head.status == .ok)
    }
}
