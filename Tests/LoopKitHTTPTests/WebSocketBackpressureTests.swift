import HTTPTypes
import LoopKit
import Synchronization
import Testing
@testable import LoopKitHTTP
import LoopKitHTTPTesting

/// A WebSocket's sends wait for a slow reader: the server never buffers more than its high-water mark
/// (and one message) however much the handler has to send.
/// A count several threads add to.
final class Counter: Sendable {
    let value = Atomic<Int>(0)
}

@Suite("WebSocket backpressure")
struct WebSocketBackpressureTests {
    static let messageSize = 8 * 1024
    /// 32 MiB: more than loopback's socket buffers can hold, so the sender must wait.
    static let messageCount = 4_096

    @Test func sendWaitsForASlowReaderAndEverythingArrivesOnceItReads() async throws {
        let sent = Counter()
        let finished = Flag()
        var router = HTTPRouter()
        router.webSocket("/ws/flood", .inTask) { _, socket in
            let payload = Bytes([UInt8](repeating: 0x5A, count: Self.messageSize))
            for _ in 0..<Self.messageCount {
                try await socket.send(.binary(payload))
                sent.value.add(1, ordering: .relaxed)
            }
            finished.set()
        }
        // The reader stalls on purpose: no write deadline may cut it, however slow the machine (a thread
        // sanitizer run takes minutes here).
        try await withServer(router: router, configure: { $0.writeTimeout = .seconds(3_600) }) { server, port in
            let client = try WebSocketClient(port: port, path: "/ws/flood")
            // The client reads nothing: the kernel's buffers fill, then the server's own output.
            #expect(try await eventually { try await server.pendingOutputBytes() > 0 })
            let highWaterMark = server.configuration.writeHighWaterMark
            for _ in 0..<20 {
                let pending = try await server.pendingOutputBytes()
                #expect(pending <= highWaterMark + Self.messageSize + 14, "the server buffered \(pending) bytes")
                try await Task.sleep(for: .milliseconds(5))
            }
            #expect(sent.value.load(ordering: .relaxed) < Self.messageCount)
            #expect(!finished.isSet)
            // Now it reads: every message arrives, whole and in order, and the handler finishes.
            var received = 0
            while received < Self.messageCount, let frame = try client.readFrame() {
                #expect(frame.opcode == .binary && frame.payload.count == Self.messageSize)
                received += 1
            }
            #expect(received == Self.messageCount)
            #expect(try await eventually { finished.isSet })
        }
    }

    @Test func aSecondMessagesReaderWhileOneWaitsStopsTheProcess() async throws {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            var router = HTTPRouter()
            router.webSocket("/ws/two-readers", .inTask) { _, socket in
                Task(executorPreference: socket.loop) { for try await _ in socket.messages {} }
                for try await _ in socket.messages {}
            }
            let client = try! HTTPTestClient(router: router)
            _ = try! client.webSocket("/ws/two-readers")
            try! client.runUntilIdle()
        }
        let message = String(decoding: try #require(result).standardErrorContent, as: UTF8.self)
        #expect(message.contains("WebSocket.messages has one consumer at a time"))
    }
}
