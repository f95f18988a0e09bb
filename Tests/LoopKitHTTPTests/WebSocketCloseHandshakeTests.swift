import Testing
@testable import LoopKitHTTP

@Suite("WebSocket close handshake")
struct WebSocketCloseHandshakeTests {
    func closePayload(_ code: UInt16, _ reason: [UInt8] = []) -> [UInt8] {
        [UInt8(code >> 8), UInt8(code & 0xFF)] + reason
    }

    @Test func validCloseCodesAreEchoedAndTheServerCloses() async throws {
        let events = Recorder<String>()
        try await withServer(router: webSocketTestRouter(events: events)) { (_: HTTPServer, port: Int) async throws in
            for code: UInt16 in [1000, 1001, 1003, 1007, 1011, 1014, 3000, 4999] {
                let client = try WebSocketClient(port: port)
                client.send(.close, closePayload(code, Array("done".utf8)))
                let close = try client.readClose()
                #expect(close?.code == code, "code \(code)")
                #expect(client.raw.isClosedByServer())
            }
            #expect(try await eventually { events.all.filter { $0 == "ended cleanly" }.count == 8 })
        }
    }

    @Test func emptyCloseIsAnsweredWithAnEmptyClose() async throws {
        try await withServer(router: webSocketTestRouter()) { (_: HTTPServer, port: Int) async throws in
            let client = try WebSocketClient(port: port)
            client.send(.close, [])
            let frame = try client.readFrame()
            #expect(frame == WebSocketFrame(opcode: .close, payload: []))  // 1005 is never sent
            #expect(client.raw.isClosedByServer())
        }
    }

    @Test func closeCodesNotAllowedOnTheWireFailWith1002() async throws {
        try await withServer(router: webSocketTestRouter()) { (_: HTTPServer, port: Int) async throws in
            for code: UInt16 in [0, 999, 1004, 1005, 1006, 1015, 1016, 2999, 5000, 65535] {
                let client = try WebSocketClient(port: port)
                client.send(.close, closePayload(code))
                try client.expectFailure(1002)
            }
        }
    }

    @Test func oneByteCloseFailsWith1002() async throws {
        try await withServer(router: webSocketTestRouter()) { (_: HTTPServer, port: Int) async throws in
            let client = try WebSocketClient(port: port)
            client.send(.close, [0x03])
            try client.expectFailure(1002)
        }
    }

    @Test func closeReasonThatIsNotUTF8FailsWith1007() async throws {
        try await withServer(router: webSocketTestRouter()) { (_: HTTPServer, port: Int) async throws in
            let client = try WebSocketClient(port: port)
            client.send(.close, closePayload(1000, [0xCE, 0xBA, 0xFF]))
            try client.expectFailure(1007)
        }
    }

    @Test func serverInitiatedCloseWaitsForTheClientsClose() async throws {
        let events = Recorder<String>()
        try await withServer(router: webSocketTestRouter(events: events)) { (_: HTTPServer, port: Int) async throws in
            let client = try WebSocketClient(port: port, path: "/ws/callbacks")
            client.sendText("bye")
            #expect(try client.readFrame()?.payload == Array("BYE".utf8))
            let close = try client.readClose()
            #expect(close?.code == 4000 && close?.reason == "bye to you")
            client.sendText("dropped")  // after the server's close: not answered
            client.send(.close, closePayload(4000))
            #expect(client.raw.isClosedByServer())
            #expect(try await eventually { events.all.contains("callbacks closed: cleanly") })
        }
    }

    @Test func clientThatGoesAwayEndsTheReaderWithConnectionLost() async throws {
        let events = Recorder<String>()
        try await withServer(router: webSocketTestRouter(events: events)) { (server: HTTPServer, port: Int) async throws in
            do {
                let client = try WebSocketClient(port: port)
                client.sendText("one")
                #expect(try client.readFrame() != nil)
            }  // dropped without a close frame
            #expect(try await eventually { events.all.contains("ended: \(WebSocketError.connectionLost)") })
            #expect(try await eventually { try await server.openConnectionCount() == 0 })
        }
    }

    @Test func violationEndsTheReaderWithTheViolation() async throws {
        let events = Recorder<String>()
        try await withServer(router: webSocketTestRouter(events: events)) { (_: HTTPServer, port: Int) async throws in
            let client = try WebSocketClient(port: port)
            client.send(.continuation, [1])
            try client.expectFailure(1002)
            #expect(try await eventually { events.all.contains { $0.hasPrefix("ended: the peer broke") } })
        }
    }
}
