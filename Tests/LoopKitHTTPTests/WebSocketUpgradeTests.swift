import LoopKit
import Testing
@testable import LoopKitHTTP

@Suite("WebSocket upgrade")
struct WebSocketUpgradeTests {
    @Test func acceptValueIsRFC6455Example() {
        #expect(WebSocketHandshake.acceptValue(forKey: "dGhlIHNhbXBsZSBub25jZQ==") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
    }

    @Test func validUpgradeGets101WithAcceptAndFields() async throws {
        try await withServer(router: webSocketTestRouter()) { (_: HTTPServer, port: Int) async throws in
            let client = try WebSocketClient(port: port)
            #expect(client.response.field("Sec-WebSocket-Accept") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
            #expect(client.response.field("Upgrade")?.lowercased() == "websocket")
            #expect(client.response.field("Connection")?.lowercased() == "upgrade")
            #expect(client.response.field("Sec-WebSocket-Extensions") == nil)
        }
    }

    func refusal(_ request: String, port: Int) throws -> WireResponse {
        try RawClient(port: port).exchange(request)
    }

    @Test func missingUpgradeFieldGets426() async throws {
        try await withServer(router: webSocketTestRouter()) { (_: HTTPServer, port: Int) async throws in
            let response = try refusal("GET /ws/echo HTTP/1.1\r\nHost: t\r\n\r\n", port: port)
            #expect(response.status == 426)
            #expect(response.field("Sec-WebSocket-Version") == "13")
            #expect(response.field("Upgrade") == "websocket")
        }
    }

    @Test func versionOtherThan13Gets426WithVersion13() async throws {
        try await withServer(router: webSocketTestRouter()) { (_: HTTPServer, port: Int) async throws in
            let response = try refusal("GET /ws/echo HTTP/1.1\r\nHost: t\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                                       + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 8\r\n\r\n", port: port)
            #expect(response.status == 426)
            #expect(response.field("Sec-WebSocket-Version") == "13")
        }
    }

    @Test func missingOrMalformedKeyGets400() async throws {
        try await withServer(router: webSocketTestRouter()) { (_: HTTPServer, port: Int) async throws in
            let start = "GET /ws/echo HTTP/1.1\r\nHost: t\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
            #expect(try refusal(start + "\r\n", port: port).status == 400)
            #expect(try refusal(start + "Sec-WebSocket-Key: short\r\n\r\n", port: port).status == 400)
            #expect(try refusal(start + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ=!\r\n\r\n", port: port).status == 400)
        }
    }

    @Test func missingConnectionUpgradeGets400() async throws {
        try await withServer(router: webSocketTestRouter()) { (_: HTTPServer, port: Int) async throws in
            let response = try refusal("GET /ws/echo HTTP/1.1\r\nHost: t\r\nUpgrade: websocket\r\nConnection: keep-alive\r\n"
                                       + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n", port: port)
            #expect(response.status == 400)
        }
    }

    @Test func http10UpgradeGets400() async throws {
        try await withServer(router: webSocketTestRouter()) { (_: HTTPServer, port: Int) async throws in
            let response = try refusal("GET /ws/echo HTTP/1.0\r\nHost: t\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                                       + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n", port: port)
            #expect(response.status == 400)
        }
    }

    @Test func otherMethodsGet405() async throws {
        try await withServer(router: webSocketTestRouter()) { (_: HTTPServer, port: Int) async throws in
            #expect(try refusal("POST /ws/echo HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n", port: port).status == 405)
        }
    }

    @Test func routeRefusesAndConnectionStaysHTTP() async throws {
        try await withServer(router: webSocketTestRouter()) { (_: HTTPServer, port: Int) async throws in
            let client = try WebSocketClient(port: port, path: "/ws/private", expectUpgrade: false)
            #expect(client.response.status == 403)
            let next = try client.raw.exchange("GET /hello HTTP/1.1\r\nHost: t\r\n\r\n")
            #expect(next.status == 200 && next.text == "hello")
        }
    }

    @Test func routeAcceptsWithItsFields() async throws {
        try await withServer(router: webSocketTestRouter()) { (_: HTTPServer, port: Int) async throws in
            let client = try WebSocketClient(port: port, path: "/ws/private", fields: ["Authorization: Bearer yes"])
            #expect(client.response.field("X-Welcome") == "1")
            #expect(try client.readFrame() == WebSocketFrame(opcode: .text, payload: Array("welcome".utf8)))
            #expect(try client.readClose()?.code == 1000)  // the handler returned
        }
    }

    @Test func handlerThatThrowsClosesWith1011() async throws {
        try await withServer(router: webSocketTestRouter()) { (_: HTTPServer, port: Int) async throws in
            let client = try WebSocketClient(port: port, path: "/ws/throws")
            #expect(try client.readFrame() == WebSocketFrame(opcode: .text, payload: Array("about to throw".utf8)))
            #expect(try client.readClose()?.code == 1011)
        }
    }

    @Test func upgradeCheckThatThrowsGets500AndTheConnectionStaysHTTP() async throws {
        let events = Recorder<String>()
        try await withServer(router: webSocketTestRouter(events: events)) { (_: HTTPServer, port: Int) async throws in
            let client = try WebSocketClient(port: port, path: "/ws/check-throws", expectUpgrade: false)
            #expect(client.response.status == 500)
            let next = try client.raw.exchange("GET /hello HTTP/1.1\r\nHost: t\r\n\r\n")
            #expect(next.status == 200 && next.text == "hello")
        }
        #expect(events.all.isEmpty)  // the handler never ran
    }

    @Test func callbackRouteUpgradesAndAnswers() async throws {
        try await withServer(router: webSocketTestRouter()) { (_: HTTPServer, port: Int) async throws in
            let client = try WebSocketClient(port: port, path: "/ws/callbacks")
            client.sendText("hi")
            #expect(try client.readFrame() == WebSocketFrame(opcode: .text, payload: Array("HI".utf8)))
            client.sendText("bye")
            #expect(try client.readFrame() == WebSocketFrame(opcode: .text, payload: Array("BYE".utf8)))
            #expect(try client.readClose()?.code == 4000)
        }
    }

    @Test func framesSentWithTheRequestReachTheSocket() async throws {
        try await withServer(router: webSocketTestRouter()) { (_: HTTPServer, port: Int) async throws in
            let raw = try RawClient(port: port)
            var bytes = Array(("GET /ws/echo HTTP/1.1\r\nHost: t\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                               + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n").utf8)
            bytes += WebSocketFrameEncoder.encode(WebSocketFrame(opcode: .text, payload: Array("early".utf8)), maskKey: [1, 2, 3, 4])
            raw.send(bytes)
            #expect(try raw.readResponse().status == 101)
            var parser = WebSocketFrameParser(maxFrameSize: 1 << 20, requiresMask: false)
            while raw.buffer.count < 7 { raw.fill() }
            #expect(try parseFrames([raw.buffer], parser: &parser) == [WebSocketFrame(opcode: .text, payload: Array("early".utf8))])
        }
    }

    @Test func upgradedConnectionCountsAsOpenAndShutdownSendsGoingAway() async throws {
        let group = try LoopGroup(threads: 1, name: "ws-shutdown")
        let server = HTTPServer(group: group, router: webSocketTestRouter(), logger: quietLogger)
        let port = try server.start()
        let client = try WebSocketClient(port: port)
        client.sendText("hi")
        #expect(try client.readFrame()?.payload == Array("hi".utf8))
        #expect(try await server.openConnectionCount() == 1)
        server.beginShutdown()  // not a task: the blocking reads below could hold the pool's threads
        let close = try client.readClose()
        #expect(close?.code == 1001)
        client.send(.close, [0x03, 0xE9])  // the client answers: the handshake completes
        #expect(client.raw.isClosedByServer())
        await server.shutdown()
        group.shutdown()
    }
}
