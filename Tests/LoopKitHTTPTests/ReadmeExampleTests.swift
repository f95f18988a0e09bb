import LoopKit
import Testing
@testable import LoopKitHTTP

@Suite("The README's server")
struct ReadmeExampleTests {
    @Test func readmeServerAnswersBothRoutes() async throws {
        let group = try LoopGroup(threads: 2)
        var router = HTTPRouter()
        router.get("/hello") { _ in .text("Hello, World!") }                        // sync: on the loop thread
        router.get("/sum") { request async throws in                                 // async: a task on the loop
            try await request.loop.process(0..<1_000_000, each: { _ in }); return .text("done") }
        let server = HTTPServer(group: group, configuration: .init(port: 0), router: router, logger: quietLogger)
        let port = try server.start()
        let client = try RawClient(port: port)
        #expect(try client.exchange("GET /hello HTTP/1.1\r\nHost: t\r\n\r\n").text == "Hello, World!")
        #expect(try client.exchange("GET /sum HTTP/1.1\r\nHost: t\r\n\r\n").text == "done")
        await server.shutdown()
        group.shutdown()
    }
}
