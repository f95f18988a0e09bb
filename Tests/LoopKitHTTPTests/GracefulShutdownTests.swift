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

    /// Issue 43, item 4: an idle event stream held graceful shutdown for the whole deadline, and the client
    /// then saw a reset instead of the end of the chunked body.
    @Test("An open event stream ends cleanly when shutdown begins: its task cancelled, the chunked body terminated",
          .timeLimit(.minutes(5)))
    func eventStreamEndsAtShutdown() async throws {
        let group = try LoopGroup(threads: 1)
        var configuration = HTTPServer.Configuration()
        configuration.shutdownDeadline = .seconds(600)  // before the fix, shutdown waited for all of it
        var router = HTTPRouter()
        router.get("/events") { _ in
            .events { events in
                try await events.send(ServerSentEvent(data: "ready"))
                try await Task.sleep(for: .seconds(3600))  // waits for an event that never comes
            }
        }
        let server = HTTPServer(group: group, configuration: configuration, router: router, logger: quietLogger)
        let port = try server.start()
        let client = try RawClient(port: port)
        client.send("GET /events HTTP/1.1\r\nHost: t\r\n\r\n")
        while !String(decoding: client.buffer, as: UTF8.self).contains("data: ready") {
            guard client.fill() else { break }
        }
        await server.shutdown()
        let text = String(decoding: client.readUntilClosed(), as: UTF8.self)
        #expect(text.contains("data: ready"))
        #expect(text.hasSuffix("\r\n0\r\n\r\n"))  // the last chunk: a clean end, not a reset
        group.shutdown()
    }

    @Test("A handler's task sees the server's graceful shutdown (gracefulShutdown(), cancelOnGracefulShutdown)",
          .timeLimit(.minutes(5)))
    func handlerTasksSeeGracefulShutdown() async throws {
        let group = try LoopGroup(threads: 1)
        var configuration = HTTPServer.Configuration()
        configuration.shutdownDeadline = .seconds(600)
        var router = HTTPRouter()
        router.get("/until-shutdown", .inTask) { _ async throws -> HTTPServerResponse in
            try await gracefulShutdown()
            return .text(Task.isShuttingDownGracefully ? "stopping" : "not told")
        }
        let server = HTTPServer(group: group, configuration: configuration, router: router, logger: quietLogger)
        let services = ServiceGroup(services: [server], logger: quietLogger)
        let running = Task { try await services.run() }
        try await eventually { server.port != nil }
        let client = try RawClient(port: try #require(server.port))
        client.send("GET /until-shutdown HTTP/1.1\r\nHost: t\r\n\r\n")
        try await eventually { (try? await server.openConnectionCount()) == 1 }
        await services.triggerGracefulShutdown()
        let response = try client.readResponse()
        #expect(response.text == "stopping")
        try await running.value
        group.shutdown()
    }
}
