import HTTPTypes
import LoopKitHTTPTesting
import Testing
@testable import LoopKitHTTP

extension HTTPField.Name {
    static let requestID = HTTPField.Name("X-Request-ID")!
}

@Suite("Request ids")
struct RequestIDTests {
    func idRouter() -> HTTPRouter {
        var router = HTTPRouter()
        router.get("/id") { request in .text(request.id) }
        return router
    }

    @Test(arguments: HTTPTestMode.allCases)
    func aValidClientIDIsTakenAndEchoed(mode: HTTPTestMode) throws {
        let client = try HTTPTestClient(router: idRouter(), mode: mode)
        defer { client.shutDown() }
        let response = try client.execute(.get, "/id", headerFields: [.requestID: "abc-123_XYZ.~!"])
        #expect(response.text == "abc-123_XYZ.~!")
        #expect(response.headerFields[.requestID] == "abc-123_XYZ.~!")
    }

    @Test(arguments: HTTPTestMode.allCases)
    func withoutAClientIDOneIsMadeAndEchoed(mode: HTTPTestMode) throws {
        let client = try HTTPTestClient(router: idRouter(), mode: mode)
        defer { client.shutDown() }
        let response = try client.execute(.get, "/id")
        #expect(!response.text.isEmpty)
        #expect(response.headerFields[.requestID] == response.text)
        #expect(HTTPRequestIDGenerator.isValid(response.text))
    }

    /// A server's made ids name the process, its loop context and the request: unique in the process.
    @Test func madeIDsAreUniqueAcrossRequestsAndLoops() throws {
        let clients = try (0..<3).map { _ in try HTTPTestClient(router: idRouter(), mode: .live) }
        defer { for client in clients { client.shutDown() } }
        var ids = Set<String>()
        for _ in 0..<200 {
            for client in clients { ids.insert(try client.execute(.get, "/id").text) }
        }
        #expect(ids.count == 600)
    }

    /// The in-memory test host makes `memory-1`, `memory-2`…: the same in every run, whatever else the
    /// process has done (a trace must not depend on how many loops were made before).
    @Test func theInMemoryHostMakesTheSameIDsEveryRun() throws {
        for _ in 0..<2 {
            let client = try HTTPTestClient(router: idRouter())
            #expect(try client.execute(.get, "/id").text == "memory-1")
            #expect(try client.execute(.get, "/id").text == "memory-2")
        }
    }

    @Test func madeIDsAreSmallStrings() {
        var generator = HTTPRequestIDGenerator()
        for _ in 0..<1000 { #expect(generator.next().utf8.count <= 15) }
    }

    @Test(arguments: ["", String(repeating: "a", count: 129), "has space", "tab\there", "caf\u{E9}", "semi;colon\u{7F}"])
    func anInvalidClientIDIsReplaced(id: String) throws {
        #expect(!HTTPRequestIDGenerator.isValid(id))
    }

    @Test func anOverLongClientIDIsReplacedOnTheWire() throws {
        let client = try HTTPTestClient(router: idRouter())
        defer { client.shutDown() }
        let long = String(repeating: "a", count: 129)
        let response = try client.execute(.get, "/id", headerFields: [.requestID: long])
        #expect(response.text != long)
        #expect(response.headerFields[.requestID] == response.text)
        #expect(HTTPRequestIDGenerator.isValid(String(repeating: "a", count: 128)))
    }

    @Test func theFieldIsConfigurableAndAHandlersOwnValueWins() throws {
        var configuration = HTTPServer.Configuration()
        configuration.requestIDField = HTTPField.Name("X-Correlation-ID")!
        var router = idRouter()
        router.get("/own") { _ in HTTPServerResponse(status: .ok, headerFields: [HTTPField.Name("X-Correlation-ID")!: "mine"]) }
        let client = try HTTPTestClient(router: router, configuration: configuration)
        defer { client.shutDown() }
        let response = try client.execute(.get, "/id", headerFields: [HTTPField.Name("X-Correlation-ID")!: "c-1"])
        #expect(response.text == "c-1")
        #expect(response.headerFields[HTTPField.Name("X-Correlation-ID")!] == "c-1")
        #expect(response.headerFields[.requestID] == nil)
        #expect(try client.execute(.get, "/own").headerFields[values: HTTPField.Name("X-Correlation-ID")!] == ["mine"])
    }

    @Test func withNoFieldIDsAreMadeAndNotEchoed() throws {
        var configuration = HTTPServer.Configuration()
        configuration.requestIDField = nil
        let client = try HTTPTestClient(router: idRouter(), configuration: configuration)
        defer { client.shutDown() }
        let response = try client.execute(.get, "/id", headerFields: [.requestID: "given"])
        #expect(response.text != "given")
        #expect(response.headerFields[.requestID] == nil)
    }
}
