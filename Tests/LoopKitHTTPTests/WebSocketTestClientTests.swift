import HTTPTypes
import LoopKitHTTPTesting
import Testing
@testable import LoopKitHTTP

/// `WebSocketTestClient`: a route's WebSocket tested without hand-built frames, in memory and live.
@Suite("WebSocket test client")
struct WebSocketTestClientTests {
    @Test(arguments: HTTPTestMode.allCases)
    func anEchoRouteAnswersTextAndBinaryMessages(mode: HTTPTestMode) throws {
        let client = try HTTPTestClient(router: webSocketTestRouter(), mode: mode)
        let socket = try client.webSocket("/ws/echo")
        #expect(socket.upgradeResponse.status == .switchingProtocols)
        try socket.send("hello")
        #expect(try socket.receive() == .text("hello"))
        try socket.send([0, 1, 2, 255])
        #expect(try socket.receive() == .binary([0, 1, 2, 255]))
        let big = String(repeating: "é", count: 40_000)  // more than one read, multi-byte characters
        try socket.send(big)
        #expect(try socket.receive() == .text(big))
        #expect(try socket.close() == .normalClosure)
    }

    @Test(arguments: HTTPTestMode.allCases)
    func theServersCloseIsReportedWithItsCodeAndReason(mode: HTTPTestMode) throws {
        let client = try HTTPTestClient(router: webSocketTestRouter(), mode: mode)
        let socket = try client.webSocket("/ws/callbacks")
        try socket.send("hi")
        #expect(try socket.receive() == .text("HI"))
        try socket.send("bye")
        #expect(try socket.receive() == .text("BYE"))  // the route answers, then closes
        #expect(throws: WebSocketTestClientError.closed(code: WebSocketCloseCode(rawValue: 4000), reason: "bye to you")) {
            try socket.receive()
        }
    }

    @Test(arguments: HTTPTestMode.allCases)
    func aRefusedUpgradeIsATypedError(mode: HTTPTestMode) throws {
        let client = try HTTPTestClient(router: webSocketTestRouter(), mode: mode)
        #expect {
            _ = try client.webSocket("/ws/private")
        } throws: { error in
            guard case WebSocketTestClientError.notUpgraded(let response) = error else { return false }
            return response.status == .forbidden
        }
    }

    @Test(arguments: HTTPTestMode.allCases)
    func aMessageOverTheRoutesLimitClosesWith1009(mode: HTTPTestMode) throws {
        let client = try HTTPTestClient(router: webSocketTestRouter(), mode: mode)
        let socket = try client.webSocket("/ws/small")
        try socket.send(String(repeating: "x", count: 500))
        #expect(try socket.receive() == .text(String(repeating: "x", count: 500)))
        try socket.send(String(repeating: "y", count: 700))  // over the route's 600-byte frame limit
        #expect(throws: WebSocketTestClientError.closed(code: .messageTooBig, reason: "frame larger than 600 bytes")) { try socket.receive() }
    }
}
