import HTTPTypes
import LoopKitHTTPTesting
import Testing
@testable import LoopKitHTTP

/// Bodies are `Bytes` (issue 30): a response body at or above the copy threshold is queued by reference
/// after its head, a smaller one is copied into the write batch with it; a request body is collected
/// into one `Bytes`, whole however many reads it came in.
@Suite("Bodies as Bytes")
struct BytesBodyTests {
    /// 200,000 bytes, each different from its neighbours: more than one read of the loop's 64 KiB buffer.
    static let large = Bytes((0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 8) })

    static func router() -> HTTPRouter {
        var router = HTTPRouter()
        router.get("/slice") { request in
            let start = Int(request.query("from") ?? "0")!
            let end = Int(request.query("to") ?? "0")!
            return HTTPServerResponse(status: .ok, body: .bytes(large[start..<end]))
        }
        router.get("/large") { _ in HTTPServerResponse(status: .ok, body: .bytes(large)) }
        router.on(.post, "/collect", bodyLimit: nil) { _, body in
            HTTPServerResponse(status: .ok, body: .bytes(try await body.collect(upTo: 1 << 20)))
        }
        router.post("/collected") { request in HTTPServerResponse(status: .ok, body: .bytes(request.body)) }
        return router
    }

    @Test(arguments: [(0, 10), (1000, 1000 + HTTPConnection.bodyCopyThreshold - 1),
                      (1000, 1000 + HTTPConnection.bodyCopyThreshold), (70_000, 190_000)])
    func aResponseFromASliceOfBytesSendsExactlyTheSlice(range: (Int, Int)) throws {
        let client = try HTTPTestClient(router: Self.router())
        let response = try client.execute(.get, "/slice?from=\(range.0)&to=\(range.1)")
        #expect(response.headerFields[.contentLength] == String(range.1 - range.0))
        #expect(response.body == Self.large[range.0..<range.1])
    }

    /// Pipelined requests for a body sent by reference: each response whole, in order, with its head.
    @Test func pipelinedResponsesSentByReferenceArriveWholeAndInOrder() throws {
        let client = try HTTPTestClient(router: Self.router())
        try client.send("GET /large HTTP/1.1\r\nHost: t\r\n\r\nGET /slice?from=5&to=9 HTTP/1.1\r\nHost: t\r\n\r\nGET /large HTTP/1.1\r\nHost: t\r\n\r\n")
        #expect(try client.nextResponse().body == Self.large)
        #expect(try client.nextResponse().body == Self.large[5..<9])
        #expect(try client.nextResponse().body == Self.large)
    }

    @Test func aHeadRequestForABodySentByReferenceGetsItsLengthAndNoBody() throws {
        let client = try HTTPTestClient(router: Self.router())
        try client.send("HEAD /large HTTP/1.1\r\nHost: t\r\n\r\nGET /slice?from=0&to=3 HTTP/1.1\r\nHost: t\r\n\r\n")
        let head = try client.nextResponse(isHeadRequest: true)
        #expect(head.headerFields[.contentLength] == String(Self.large.count))
        #expect(head.body.isEmpty)
        #expect(try client.nextResponse().body == Self.large[0..<3])  // nothing of the large body came in between
    }

    @Test(arguments: HTTPTestMode.allCases)
    func collectReturnsBytesEqualToWhatWasSent(mode: HTTPTestMode) throws {
        let client = try HTTPTestClient(router: Self.router(), mode: mode)
        #expect(try client.execute(.post, "/collect", body: Self.large).body == Self.large)
        #expect(try client.execute(.post, "/collect", body: [1, 2, 3]).body == [1, 2, 3])
        #expect(try client.execute(.post, "/collect").body.isEmpty)
    }

    @Test(arguments: HTTPTestMode.allCases)
    func aCollectedRequestBodyIsTheBytesSent(mode: HTTPTestMode) throws {
        let client = try HTTPTestClient(router: Self.router(), mode: mode)
        #expect(try client.execute(.post, "/collected", body: Self.large).body == Self.large)
        #expect(try client.execute(.post, "/collected", body: [1, 2, 3]).body == [1, 2, 3])
        #expect(try client.execute(.post, "/collected").body.isEmpty)
    }
}
