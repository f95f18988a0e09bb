import Testing
@testable import LoopKitHTTP

@Suite("File descriptors")
struct FileDescriptorTests {
    @Test func tenThousandFreshConnectionsLeaveNoDescriptorBehind() async throws {
        try await withServer { server, port in
            for index in 0..<10_000 {
                let client = try RawClient(port: port)
                let close = index % 2 == 0 ? "Connection: close\r\n" : ""
                let response = try client.exchange("GET /hello HTTP/1.1\r\nHost: t\r\n\(close)\r\n")
                #expect(response.status == 200)
            }
            #expect(serverSocketCount(port: port) >= 1)
            #expect(try await eventually { try await server.openConnectionCount() == 0 })
            #expect(serverSocketCount(port: port) == 1)  // the listener alone
        }
    }
}
