import HTTPTypes
import LoopKitHTTP
import LoopKitHTTPTesting
import LoopKitNet
import Testing

@Suite("Streamed bodies with a declared Content-Length")
struct DeclaredLengthStreamTests {
    /// `/sized?declared=N&written=M`: a stream that declares N bytes and writes M, in two writes.
    static func router() -> HTTPRouter {
        var router = HTTPRouter()
        router.get("/sized") { request in
            let declared = Int(request.query("declared") ?? "0")!, written = Int(request.query("written") ?? "0")!
            return HTTPServerResponse(status: .ok, headerFields: [.contentLength: "\(declared)"], body: .stream { writer in
                try await writer.write(Bytes([UInt8](repeating: 0x61, count: written / 2)))
                try await writer.write(Bytes([UInt8](repeating: 0x62, count: written - written / 2)))
            })
        }
        router.get("/hello") { _ in .text("hello") }
        return router
    }

    @Test(arguments: HTTPTestMode.allCases)
    func aDeclaredLengthFramesTheBodyByLengthAndKeepsAlive(mode: HTTPTestMode) throws {
        let client = try HTTPTestClient(router: Self.router(), mode: mode)
        try client.send("GET /sized?declared=5000&written=5000 HTTP/1.1\r\nHost: t\r\n\r\n")
        let response = try client.nextResponse()
        #expect(response.headerFields[.contentLength] == "5000")
        #expect(response.headerFields[.transferEncoding] == nil)
        #expect(response.body.count == 5000)
        #expect(try client.execute(.get, "/hello").text == "hello")
    }

    @Test func aShortBodyClosesTheConnection() throws {
        let client = try HTTPTestClient(router: Self.router())
        try client.send("GET /sized?declared=100&written=10 HTTP/1.1\r\nHost: t\r\n\r\n")
        let received = try client.readUntilClosed()
        #expect(String(decoding: received, as: UTF8.self).hasSuffix("\r\n\r\naaaaabbbbb"))
        #expect(client.isClosedByServer)
    }

    @Test func aLongBodyIsCutAtTheLengthAndClosesTheConnection() throws {
        let client = try HTTPTestClient(router: Self.router())
        try client.send("GET /sized?declared=4&written=10 HTTP/1.1\r\nHost: t\r\n\r\n")
        let received = try client.readUntilClosed()
        #expect(!String(decoding: received, as: UTF8.self).contains("b"))
        #expect(client.isClosedByServer)
    }
}
