import Logging
import LoopKit
import ServiceLifecycle
import Testing
@testable import LoopKitHTTP

@Suite("Graceful shutdown")
struct GracefulShutdownTests {
    @Test func inFlightRequestFinishesBeforeShutdownReturns() async throws {
        let gate = Gate()
        let group = try LoopGroup(threads: 1)
        var configuration = HTTPServer.Configuration()
        configuration.shutdownDeadline = probeSafeShutdownDeadline
        let server = HTTPServer(group: group, configuration: configuration, router: testRouter(gate: gate), logger: quietLogger)
        let port = try server.start()
        let client = try RawClient(port: port)
        client.send("GET /gate HTTP/1.1\r\nHost: t\r\n\r\n")
        try await eventually { gate.arrivals > 0 }
        let shutdown = Task { await server.shutdown() }
        try await waitUntilStoppedAccepting(port: port)
        gate.open()
        let response = try client.readResponse()
        #expect(response.text == "opened")
        #expect(response.field("Connection") == "close")
        #expect(client.isClosedByServer())
        await shutdown.value
        group.shutdown()
    }

    @Test func aLoopShuttingDownUnderARunningServerClosesItsConnections() async throws {
        let group = try LoopGroup(threads: 1)
        let server = HTTPServer(group: group, configuration: HTTPServer.Configuration(), router: testRouter(), logger: quietLogger)
        let port = try server.start()
        let client = try RawClient(port: port)
        #expect(try client.exchange("GET /hello HTTP/1.1\r\nHost: t\r\n\r\n").status == 200)
        group.shutdown()  // no server.shutdown() first: the loop's own shutdown must close the socket
        #expect(client.isClosedByServer())
        #expect(serverSocketCount(port: port) == 0)  // listener and accepted socket both closed
        await server.shutdown()  // the loops are gone: returns at once
    }

    @Test func idleKeepAliveConnectionsAreClosed() async throws {
        let group = try LoopGroup(threads: 1)
        let server = HTTPServer(group: group, router: testRouter(), logger: quietLogger)
        let port = try server.start()
        let client = try RawClient(port: port)
        #expect(try client.exchange("GET /hello HTTP/1.1\r\nHost: t\r\n\r\n").status == 200)
        await server.shutdown()
        #expect(client.isClosedByServer())
        group.shutdown()
    }

    @Test func deadlineClosesRequestsThatDoNotFinish() async throws {
        let group = try LoopGroup(threads: 1)
        var configuration = HTTPServer.Configuration()
        configuration.shutdownDeadline = .milliseconds(50)
        let gate = Gate()
        let server = HTTPServer(group: group, configuration: configuration, router: testRouter(gate: gate), logger: quietLogger)
        let port = try server.start()
        let client = try RawClient(port: port)
        client.send("GET /gate HTTP/1.1\r\nHost: t\r\n\r\n")
        try await eventually { gate.arrivals > 0 }
        await server.shutdown()
        #expect(client.readUntilClosed().isEmpty)
        // Let the abandoned handler finish on its loop before the loop goes away, so the test leaves no
        // task behind.
        gate.open()
        try await eventually { gate.departures.load(ordering: .relaxed) > 0 }
        try await group.loops[0].perform {}
        group.shutdown()
    }

    @Test func serviceGroupShutdownReturnsFromRun() async throws {
        let group = try LoopGroup(threads: 1)
        let server = HTTPServer(group: group, router: testRouter(), logger: quietLogger)
        let services = ServiceGroup(services: [server], logger: quietLogger)
        let running = Task { try await services.run() }
        try await eventually { server.port != nil }
        let port = try #require(server.port)
        #expect(try RawClient(port: port).exchange("GET /hello HTTP/1.1\r\nHost: t\r\n\r\n").status == 200)
        await services.triggerGracefulShutdown()
        try await running.value
        #expect(server.port == nil)
        group.shutdown()
    }

    @Test func noFileDescriptorIsLeftAfterShutdown() async throws {
        let group = try LoopGroup(threads: 1)
        let server = HTTPServer(group: group, router: testRouter(), logger: quietLogger)
        let port = try server.start()
        var clients: [RawClient] = []
        for _ in 0..<20 {
            let client = try RawClient(port: port)
            #expect(try client.exchange("GET /hello HTTP/1.1\r\nHost: t\r\n\r\n").status == 200)
            clients.append(client)
        }
        #expect(serverSocketCount(port: port) == 21)  // the listener and 20 connections
        await server.shutdown()
        for client in clients { #expect(client.isClosedByServer()) }
        #expect(serverSocketCount(port: port) == 0)
        clients.removeAll()
        group.shutdown()
    }
}
