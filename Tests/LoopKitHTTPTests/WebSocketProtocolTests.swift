import Foundation
import Testing
@testable import LoopKitHTTP

/// RFC 6455's rules, broken with raw frames written to a real socket: the server fails the connection
/// with the right close code and closes it.
@Suite("WebSocket protocol rules")
struct WebSocketProtocolTests {
    func withSocket(_ path: String = "/ws/echo", _ body: (WebSocketClient) async throws -> Void) async throws {
        try await withServer(router: webSocketTestRouter()) { (_: HTTPServer, port: Int) async throws in
            try await body(try WebSocketClient(port: port, path: path))
        }
    }

    @Test func echoesTextAndBinary() async throws {
        try await withSocket { (client: WebSocketClient) async throws in
            client.sendText("héllo")
            #expect(try client.readFrame() == WebSocketFrame(opcode: .text, payload: Array("héllo".utf8)))
            client.send(.binary, [0, 1, 2, 255])
            #expect(try client.readFrame() == WebSocketFrame(opcode: .binary, payload: [0, 1, 2, 255]))
            client.send(.text, [])
            #expect(try client.readFrame() == WebSocketFrame(opcode: .text, payload: []))
        }
    }

    @Test func assemblesFragmentsWithAPingBetweenThem() async throws {
        try await withSocket { (client: WebSocketClient) async throws in
            client.send(.text, Array("frag".utf8), fin: false)
            client.send(.ping, [7, 7])
            client.send(.continuation, Array("men".utf8), fin: false)
            client.send(.continuation, Array("ted".utf8))
            #expect(try client.readFrame() == WebSocketFrame(opcode: .pong, payload: [7, 7]))
            #expect(try client.readFrame() == WebSocketFrame(opcode: .text, payload: Array("fragmented".utf8)))
        }
    }

    @Test func unmaskedClientFrameFailsWith1002() async throws {
        try await withSocket { (client: WebSocketClient) async throws in
            client.send(WebSocketFrame(opcode: .text, payload: Array("x".utf8)), masked: false)
            try client.expectFailure(1002)
        }
    }

    @Test func reservedBitsFailWith1002() async throws {
        for first: UInt8 in [0xC1, 0xA1, 0x91] {
            try await withSocket { (client: WebSocketClient) async throws in
                client.raw.send([first, 0x80] + client.mask)
                try client.expectFailure(1002)
            }
        }
    }

    @Test func undefinedOpcodeFailsWith1002() async throws {
        for opcode: UInt8 in [0x3, 0x7, 0xB, 0xF] {
            try await withSocket { (client: WebSocketClient) async throws in
                client.raw.send([0x80 | opcode, 0x80] + client.mask)
                try client.expectFailure(1002)
            }
        }
    }

    @Test func fragmentedControlFrameFailsWith1002() async throws {
        try await withSocket { (client: WebSocketClient) async throws in
            client.send(.ping, [1], fin: false)
            try client.expectFailure(1002)
        }
    }

    @Test func controlFrameOver125BytesFailsWith1002() async throws {
        try await withSocket { (client: WebSocketClient) async throws in
            client.send(.ping, [UInt8](repeating: 1, count: 126))
            try client.expectFailure(1002)
        }
    }

    @Test func continuationOutsideAMessageFailsWith1002() async throws {
        try await withSocket { (client: WebSocketClient) async throws in
            client.send(.continuation, Array("x".utf8))
            try client.expectFailure(1002)
        }
    }

    @Test func newMessageInsideAFragmentedOneFailsWith1002() async throws {
        try await withSocket { (client: WebSocketClient) async throws in
            client.send(.text, Array("a".utf8), fin: false)
            client.send(.binary, [1])
            try client.expectFailure(1002)
        }
    }

    @Test func invalidUTF8SplitAcrossFragmentsFailsWith1007() async throws {
        try await withSocket { (client: WebSocketClient) async throws in
            // κόσμε is fine split inside a character; then a surrogate (ED A0 80) split across two fragments.
            let text = Array("κόσμε".utf8)
            client.send(.text, Array(text[..<3]), fin: false)
            client.send(.continuation, Array(text[3...]) + [0xED], fin: false)
            client.send(.continuation, [0xA0, 0x80], fin: false)
            try client.expectFailure(1007)
        }
    }

    @Test func textEndingInsideACharacterFailsWith1007() async throws {
        try await withSocket { (client: WebSocketClient) async throws in
            client.send(.text, [0x41, 0xE2, 0x82])
            try client.expectFailure(1007)
        }
    }

    @Test func messagePastTheLimitFailsWith1009() async throws {
        try await withSocket("/ws/small") { (client: WebSocketClient) async throws in
            client.send(.binary, [UInt8](repeating: 1, count: 500), fin: false)
            client.send(.continuation, [UInt8](repeating: 1, count: 501))
            try client.expectFailure(1009)
        }
    }

    @Test func framePastTheLimitFailsWith1009() async throws {
        try await withSocket("/ws/small") { (client: WebSocketClient) async throws in
            client.raw.send([0x82, 0xFE, 0x02, 0x59] + client.mask)  // a 601-byte frame: refused at its header
            try client.expectFailure(1009)
        }
    }

    @Test func sixtyFourBitLengthWithTheTopBitFailsWith1002() async throws {
        try await withSocket { (client: WebSocketClient) async throws in
            client.raw.send([0x82, 0xFF, 0x80, 0, 0, 0, 0, 0, 0, 0] + client.mask)
            try client.expectFailure(1002)
        }
    }

    @Test func pingIsAnsweredWithItsPayload() async throws {
        try await withSocket { (client: WebSocketClient) async throws in
            client.send(.ping, Array("are you there".utf8))
            #expect(try client.readFrame() == WebSocketFrame(opcode: .pong, payload: Array("are you there".utf8)))
        }
    }

    @Test func keepAlivePingUnansweredClosesTheConnection() async throws {
        let events = Recorder<String>()
        try await withServer(router: webSocketTestRouter(events: events)) { (_: HTTPServer, port: Int) async throws in
            let client = try WebSocketClient(port: port, path: "/ws/ping")
            #expect(try client.readFrame()?.opcode == .ping)  // and never answered
            let close = try client.readClose()
            #expect(close?.code == 1001 && close?.reason == "ping timeout")
            #expect(client.raw.isClosedByServer())
            #expect(try await eventually { events.all.contains("ping route: \(WebSocketError.pingTimeout)") })
        }
    }

    @Test func answeredKeepAlivePingsKeepTheConnection() async throws {
        try await withServer(router: webSocketTestRouter()) { (_: HTTPServer, port: Int) async throws in
            let client = try WebSocketClient(port: port, path: "/ws/ping")
            for _ in 0..<8 {  // 8 pings, each answered, 20 ms apart: longer than the 100 ms timeout in all
                let ping = try client.readFrame()
                #expect(ping?.opcode == .ping)
                client.send(.pong, ping?.payload ?? [])
            }
            client.send(.close, [0x03, 0xE8])
            #expect(try client.readClose()?.code == 1000)
        }
    }
}

/// Issue 43, item 10: on a violation the server wrote its close frame and closed the socket while the peer
/// was still sending, so the kernel answered the unread input with a reset (no FIN), which could discard the
/// close frame. Now the server half-closes and drains before the final close.
@Suite("Closing on a violation while the peer keeps sending")
struct LingeringCloseTests {
    @Test("A peer flooding an oversized message gets the 1009 close frame, then an orderly end (a FIN, not a reset)")
    func oversizedFloodGetsTheCloseFrameAndAFin() async throws {
        try await withServer(router: webSocketTestRouter()) { (_: HTTPServer, port: Int) async throws in
            let client = try WebSocketClient(port: port, path: "/ws/small")
            // A 4 MiB frame's header (over the route's 600-byte frame limit), then its payload, sent from another
            // thread while this one reads: the peer is still sending when the server refuses.
            var header: [UInt8] = [0x82, 0xFF]
            withUnsafeBytes(of: UInt64(4 << 20).bigEndian) { header += $0 }
            header += client.mask
            let raw = SharedRawClient(client.raw)
            let frameHeader = header
            let flood = SenderThread {
                raw.client.send(frameHeader)
                let chunk = [UInt8](repeating: 0x55, count: 64 << 10)
                for _ in 0..<64 { raw.client.send(chunk) }  // stops at the first refused send
            }
            let close = try client.readClose()
            #expect(close?.code == 1009)
            #expect(client.raw.isClosedByServer())
            #expect(!client.raw.lastReadWasReset)  // the end came as a FIN after the close frame
            flood.join()
        }
    }

    @Test("An HTTP refusal while the client still sends its body ends with a FIN after the response")
    func httpRefusalWhileSendingEndsWithAFin() async throws {
        var router = HTTPRouter()
        router.on(.post, "/small", bodyLimit: 10) { _, _ in .text("never") }
        try await withServer(router: router) { (_: HTTPServer, port: Int) async throws in
            let client = try RawClient(port: port)
            let sender = SharedRawClient(client)
            let flood = SenderThread {
                sender.client.send("POST /small HTTP/1.1\r\nHost: t\r\nContent-Length: 4194304\r\n\r\n")
                let chunk = [UInt8](repeating: 0x61, count: 64 << 10)
                for _ in 0..<64 { sender.client.send(chunk) }
            }
            #expect(try client.readResponse().status == 413)
            #expect(client.isClosedByServer())
            #expect(!client.lastReadWasReset)
            flood.join()
        }
    }
}

/// A thread of its own for a flooding sender: the test's reads block, and a task for the sender could wait
/// behind them for a thread of Swift's small pool.
private final class SenderThread: Sendable {
    private let done = DispatchSemaphore(value: 0)

    init(_ body: @escaping @Sendable () -> Void) {
        let done = done
        Thread.detachNewThread {
            body()
            done.signal()
        }
    }

    func join() { done.wait() }
}

/// A raw client one thread sends on while another reads (a socket is full duplex; `send` touches no state of
/// the reader's).
private struct SharedRawClient: @unchecked Sendable {  // send and fill share only the descriptor
    let client: RawClient
    init(_ client: RawClient) { self.client = client }
}
