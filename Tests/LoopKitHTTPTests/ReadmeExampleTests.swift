import HTTPTypes
import LoopKit
import LoopKitHTTPTesting
import Testing
@testable import LoopKitHTTP

@Suite("The README's server")
struct ReadmeExampleTests {
    @Test func readmeServerAnswersBothRoutes() async throws {
        let group = try LoopGroup(threads: 2)
        var router = HTTPRouter()
        router.get("/hello") { _ in .text("Hello, World!") }                        // inline: on the loop thread
        router.get("/sum", .inTask) { request in                                    // .inTask: a task on the loop
            try await request.loop.process(0..<1_000_000, each: { _ in }); return .text("done") }
        let server = HTTPServer(group: group, configuration: .init(port: 0), router: router, logger: quietLogger)
        let port = try server.start()
        let client = try RawClient(port: port)
        #expect(try client.exchange("GET /hello HTTP/1.1\r\nHost: t\r\n\r\n").text == "Hello, World!")
        #expect(try client.exchange("GET /sum HTTP/1.1\r\nHost: t\r\n\r\n").text == "done")
        await server.shutdown()
        group.shutdown()
    }

    @Test func readmeMiddlewareRefusesWithoutAuthorizationAndAnswersWithTheID() throws {
        var router = HTTPRouter()
        router.use(CORSMiddleware(allowedOrigin: .only(["https://app.example"])))
        router.use(before: { request in
            request.head.headerFields[.authorization] == nil ? .text("Unauthorized", status: .unauthorized) : nil
        })
        router.get("/me") { request in request.logger.info("who"); return .text(request.id) }
        let client = try HTTPTestClient(router: router)
        defer { client.shutDown() }
        let refused = try client.execute(.get, "/me", headerFields: [.origin: "https://app.example"])
        #expect(refused.status == .unauthorized)
        #expect(refused.headerFields[.accessControlAllowOrigin] == "https://app.example")
        let me = try client.execute(.get, "/me", headerFields: [.authorization: "Bearer t", .requestID: "r-9"])
        #expect(me.text == "r-9")
    }
}
