import HTTPTypes
import LoopKit
import Testing
@testable import LoopKitHTTP

/// A blocking WebSocket client over ``RawClient``: it sends any frame (masked or not, valid or not) and
/// reads the server's frames, so tests can break every rule on the wire.
final class WebSocketClient {
    let raw: RawClient
    /// The response to the upgrade request.
    let response: WireResponse
    private var parser = WebSocketFrameParser(maxFrameSize: 1 << 26, requiresMask: false, allowsRSV1: true)
    let mask: [UInt8] = [0x12, 0x34, 0x56, 0x78]

    /// Connects and sends the upgrade request; `expectUpgrade` fails the test unless the answer is 101.
    init(port: Int, path: String = "/ws/echo", fields: [String] = [], expectUpgrade: Bool = true) throws {
        raw = try RawClient(port: port)
        var request = "GET \(path) HTTP/1.1\r\nHost: t\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        request += "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
        for field in fields { request += field + "\r\n" }
        response = try raw.exchange(request + "\r\n")
        if expectUpgrade { #expect(response.status == 101) }
    }

    func send(_ frame: WebSocketFrame, masked: Bool = true) {
        raw.send(WebSocketFrameEncoder.encode(frame, maskKey: masked ? mask : nil))
    }

    func send(_ opcode: WebSocketOpcode, _ payload: [UInt8], fin: Bool = true) {
        send(WebSocketFrame(fin: fin, opcode: opcode, payload: payload))
    }

    func sendText(_ text: String) { send(.text, Array(text.utf8)) }

    /// The next frame from the server, or nil once it closed the connection.
    func readFrame() throws -> WebSocketFrame? {
        while true {
            if !raw.buffer.isEmpty {
                let (event, consumed) = try raw.buffer.withUnsafeBytes { bytes in
                    try Result { () throws(WebSocketViolation) in try parser.parse(bytes) }.get()
                }
                raw.buffer.removeFirst(consumed)
                if case .frame(let frame) = event { return frame }
            }
            guard raw.fill() else { return nil }
        }
    }

    /// Reads frames until a close frame; returns its code (nil when empty) and reason, or nil at the end
    /// of the stream without one.
    func readClose() throws -> (code: UInt16?, reason: String)? {
        while let frame = try readFrame() {
            guard frame.opcode == .close else { continue }
            guard frame.payload.count >= 2 else { return (nil, "") }
            return (UInt16(frame.payload[0]) << 8 | UInt16(frame.payload[1]), String(decoding: frame.payload[2...], as: UTF8.self))
        }
        return nil
    }

    /// The server failed the connection with `code`: a close frame with it, then the end of the stream.
    func expectFailure(_ code: UInt16, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let close = try readClose()
        #expect(close?.code == code, sourceLocation: sourceLocation)
        #expect(raw.isClosedByServer(), sourceLocation: sourceLocation)
    }
}

/// Routes for the WebSocket suites.
func webSocketTestRouter(events: Recorder<String> = Recorder()) -> HTTPRouter {
    var router = HTTPRouter()
    router.webSocket("/ws/echo", .inTask) { _, socket in
        do {
            for try await message in socket.messages { try await socket.send(message) }
            events.record("ended cleanly")
        } catch {
            events.record("ended: \(error)")
            throw error
        }
    }
    var small = WebSocketConfiguration()
    small.maxMessageSize = 1000
    small.maxFrameSize = 600
    router.webSocket("/ws/small", .inTask, configuration: small) { _, socket in
        for try await message in socket.messages { try await socket.send(message) }
    }
    router.webSocket("/ws/callbacks") { _, socket in
        socket.onMessage { message in
            if case .text(let text) = message { try? socket.write(.text(text.uppercased())) }
            if message == .text("bye") { socket.close(code: WebSocketCloseCode(rawValue: 4000), reason: "bye to you") }
        }
        socket.onClose { error in events.record("callbacks closed: \(error.map { "\($0)" } ?? "cleanly")") }
    }
    router.webSocket("/ws/private", .inTask, shouldUpgrade: { request in
        request.head.headerFields[.authorization] == "Bearer yes" ? .accept(headerFields: [.init("X-Welcome")!: "1"]) : .refuse(status: .forbidden)
    }) { _, socket in
        try await socket.send(.text("welcome"))
    }
    var pinging = WebSocketConfiguration()
    pinging.pingInterval = .milliseconds(20)
    pinging.pingTimeout = .milliseconds(100)
    router.webSocket("/ws/ping", .inTask, configuration: pinging) { _, socket in
        do {
            for try await _ in socket.messages {}
        } catch {
            events.record("ping route: \(error)")
        }
    }
    router.webSocket("/ws/throws", .inTask) { _, socket in
        try await socket.send(.text("about to throw"))
        throw WebSocketTestFailure()
    }
    router.webSocket("/ws/check-throws", shouldUpgrade: { _ in throw WebSocketTestFailure() }) { _, _ in
        events.record("check-throws handler ran")
    }
    router.get("/hello") { _ in .text("hello") }
    return router
}

/// What the WebSocket suites' failing routes throw.
struct WebSocketTestFailure: Error {}
