import HTTPTypes
import LoopKit
import LoopKitHTTPTesting
import LoopKitNet
import Testing
@testable import LoopKitHTTP

/// HTTPS in memory: the routes answered over OpenSSL running on the in-memory pair, on a stepped loop.
@Suite("HTTPS in memory")
struct HTTPSInMemoryTests {
    static func configuration() throws -> HTTPServer.Configuration {
        let certificates = HTTPSCertificates.shared
        var configuration = HTTPServer.Configuration()
        configuration.tls = try TLSContext(.server(certificateChain: .file(certificates.serverPEM),
                                                   privateKey: .file(certificates.serverKey)))
        return configuration
    }

    static func trustingClient() throws -> TLSContext {
        try TLSContext(.client(trustRoots: .certificates(.file(HTTPSCertificates.shared.caPEM))))
    }

    static var router: HTTPRouter {
        var router = HTTPRouter()
        router.get("/hello") { _ in .text("Hello over TLS") }
        router.post("/echo") { request in .text(String(decoding: request.body, as: UTF8.self)) }
        return router
    }

    @Test func requestsAreAnsweredOverTLSInMemory() throws {
        let client = try HTTPTestClient(router: Self.router, configuration: try Self.configuration(), clientTLS: try Self.trustingClient())
        defer { client.shutDown() }
        #expect(try client.execute(.get, "/hello").text == "Hello over TLS")
        #expect(try client.execute(.post, "/echo", body: Bytes(Array(repeating: UInt8(ascii: "x"), count: 100_000))).body.count == 100_000)
    }

    @Test func aClientThatDoesNotTrustTheServerCannotStart() throws {
        #expect(throws: HTTPTestClientError.self) {
            _ = try HTTPTestClient(router: Self.router, configuration: try Self.configuration(),
                                   clientTLS: try TLSContext(.client(trustRoots: .system)))
        }
    }

    @Test func withoutTheServersContextTheClientSaysWhatIsMissing() throws {
        #expect {
            _ = try HTTPTestClient(router: Self.router, configuration: HTTPServer.Configuration(), clientTLS: try Self.trustingClient())
        } throws: { error in
            "\(error)".contains("configuration.tls")
        }
    }
}
