import Testing
@testable import LoopKitHTTP

@Suite("WebSocket permessage-deflate")
struct WebSocketDeflateTests {
    func negotiated(_ offers: String...) -> String? {
        PerMessageDeflate.negotiate(offers, serverNoContextTakeover: false)?.responseValue
    }

    @Test func acceptsAPlainOffer() {
        #expect(negotiated("permessage-deflate") == "permessage-deflate")
        #expect(negotiated("permessage-deflate; client_max_window_bits") == "permessage-deflate")
        #expect(negotiated("x-webkit-deflate-frame") == nil)
    }

    @Test func echoesTheContextTakeoverParameters() {
        #expect(negotiated("permessage-deflate; server_no_context_takeover; client_no_context_takeover")
                == "permessage-deflate; server_no_context_takeover; client_no_context_takeover")
    }

    @Test func honoursTheServerWindowTheClientAsksFor() {
        #expect(negotiated("permessage-deflate; server_max_window_bits=10") == "permessage-deflate; server_max_window_bits=10")
        #expect(negotiated("permessage-deflate; server_max_window_bits=\"12\"") == "permessage-deflate; server_max_window_bits=12")
        #expect(negotiated("permessage-deflate; server_max_window_bits=8") == nil)  // zlib's raw deflate has no 8
    }

    @Test func declinesBadOffersAndTakesTheNextOne() {
        #expect(negotiated("permessage-deflate; unknown") == nil)
        #expect(negotiated("permessage-deflate; server_no_context_takeover; server_no_context_takeover") == nil)
        #expect(negotiated("permessage-deflate; server_max_window_bits=16") == nil)
        #expect(negotiated("permessage-deflate; server_max_window_bits") == nil)
        #expect(negotiated("permessage-deflate; client_max_window_bits=7") == nil)
        #expect(negotiated("permessage-deflate; client_no_context_takeover=1") == nil)
        #expect(negotiated("permessage-deflate; server_max_window_bits=8, permessage-deflate; client_no_context_takeover")
                == "permessage-deflate; client_no_context_takeover")
        #expect(negotiated("permessage-deflate; bad", "permessage-deflate") == "permessage-deflate")
    }

    func roundTrip(_ messages: [[UInt8]], noContextTakeover: Bool) throws -> [[UInt8]] {
        let deflater = WebSocketDeflater(windowBits: 15, noContextTakeover: noContextTakeover)
        let inflater = WebSocketInflater(noContextTakeover: noContextTakeover)
        return try messages.map { message in
            let compressed = message.withUnsafeBytes { deflater.compress($0) }
            var output: [UInt8] = []
            try compressed.withUnsafeBytes { bytes in
                Result { () throws(WebSocketViolation) in try inflater.inflate(bytes, into: &output, limit: 1 << 24) }
            }.get()
            try Result { () throws(WebSocketViolation) in try inflater.finishMessage(into: &output, limit: 1 << 24) }.get()
            return output
        }
    }

    @Test func compressesAndInflatesWithAndWithoutContextTakeover() throws {
        let messages = [Array("hello hello hello".utf8), Array(repeating: 7, count: 200_000), Array("hello hello hello".utf8), [1]]
        #expect(try roundTrip(messages, noContextTakeover: false) == messages)
        #expect(try roundTrip(messages, noContextTakeover: true) == messages)
    }

    /// Found by Fuzz/WebSocketFrameFuzzer (Corpus/WebSocketFrameFuzzer/regression-empty-messages-in-a-row): the
    /// second empty message compressed to no bytes, and the tail the peer appends to it broke the next message.
    @Test func emptyMessagesInARowKeepTheStreamInflatable() throws {
        let messages: [[UInt8]] = [[], [], [0, 0, 0, 0, 0x5B], [], Array("hello".utf8)]
        #expect(try roundTrip(messages, noContextTakeover: false) == messages)
        #expect(try roundTrip(messages, noContextTakeover: true) == messages)
    }

    /// A compressed, masked client frame.
    func compressedFrame(_ opcode: WebSocketOpcode, _ payload: [UInt8], deflater: WebSocketDeflater) -> WebSocketFrame {
        WebSocketFrame(rsv1: true, opcode: opcode, payload: payload.withUnsafeBytes { deflater.compress($0) })
    }

    @Test func negotiatedOverTheWireAndEchoedCompressed() async throws {
        try await withServer(router: webSocketTestRouter()) { (_: HTTPServer, port: Int) async throws in
            let client = try WebSocketClient(port: port, fields: ["Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits"])
            #expect(client.response.field("Sec-WebSocket-Extensions") == "permessage-deflate")
            let deflater = WebSocketDeflater(windowBits: 15, noContextTakeover: false)
            let inflater = WebSocketInflater(noContextTakeover: false)
            for text in ["compress me, compress me, compress me", "again: compress me", String(repeating: "ab", count: 50_000)] {
                client.send(compressedFrame(.text, Array(text.utf8), deflater: deflater))
                let echo = try #require(try client.readFrame())
                #expect(echo.rsv1 && echo.opcode == .text)
                var output: [UInt8] = []
                try echo.payload.withUnsafeBytes { bytes in
                    Result { () throws(WebSocketViolation) in try inflater.inflate(bytes, into: &output, limit: 1 << 24) }
                }.get()
                try Result { () throws(WebSocketViolation) in try inflater.finishMessage(into: &output, limit: 1 << 24) }.get()
                #expect(String(decoding: output, as: UTF8.self) == text)
            }
            client.send(.binary, [1, 2, 3])  // an uncompressed message is fine too
            #expect(try client.readFrame()?.rsv1 == true)
        }
    }

    @Test func fragmentedCompressedMessageIsInflatedAcrossFrames() async throws {
        try await withServer(router: webSocketTestRouter()) { (_: HTTPServer, port: Int) async throws in
            let client = try WebSocketClient(port: port, fields: ["Sec-WebSocket-Extensions: permessage-deflate"])
            let deflater = WebSocketDeflater(windowBits: 15, noContextTakeover: false)
            let compressed = Array("fragmented and compressed".utf8).withUnsafeBytes { deflater.compress($0) }
            let middle = compressed.count / 2
            client.send(WebSocketFrame(fin: false, rsv1: true, opcode: .text, payload: Array(compressed[..<middle])))
            client.send(WebSocketFrame(fin: true, rsv1: false, opcode: .continuation, payload: Array(compressed[middle...])))
            #expect(try client.readFrame()?.opcode == .text)
        }
    }

    @Test func inflatedSizePastTheLimitFailsWith1009() async throws {
        try await withServer(router: webSocketTestRouter()) { (_: HTTPServer, port: Int) async throws in
            let client = try WebSocketClient(port: port, path: "/ws/small", fields: ["Sec-WebSocket-Extensions: permessage-deflate"])
            let deflater = WebSocketDeflater(windowBits: 15, noContextTakeover: false)
            let bomb = compressedFrame(.binary, [UInt8](repeating: 0, count: 100_000), deflater: deflater)
            #expect(bomb.payload.count < 600)  // within the frame limit: only the inflated size is too big
            client.send(bomb)
            try client.expectFailure(1009)
        }
    }

    @Test func rsv1OnAContinuationFailsWith1002() async throws {
        try await withServer(router: webSocketTestRouter()) { (_: HTTPServer, port: Int) async throws in
            let client = try WebSocketClient(port: port, fields: ["Sec-WebSocket-Extensions: permessage-deflate"])
            client.send(.binary, [1], fin: false)
            client.send(WebSocketFrame(rsv1: true, opcode: .continuation, payload: [1]))
            try client.expectFailure(1002)
        }
    }

    @Test func notNegotiatedWhenTheRouteDisallowsIt() async throws {
        var router = HTTPRouter()
        var plain = WebSocketConfiguration()
        plain.allowsCompression = false
        router.webSocket("/plain", .inTask, configuration: plain) { _, socket in try await socket.send(.text("plain")) }
        try await withServer(router: router) { (_: HTTPServer, port: Int) async throws in
            let client = try WebSocketClient(port: port, path: "/plain", fields: ["Sec-WebSocket-Extensions: permessage-deflate"])
            #expect(client.response.field("Sec-WebSocket-Extensions") == nil)
            #expect(try client.readFrame() == WebSocketFrame(opcode: .text, payload: Array("plain".utf8)))
        }
    }
}
