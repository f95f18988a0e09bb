import LoopKit
import LoopKitNet
import LoopKitNetTesting
import LoopKitTesting
import Testing

/// The in-memory pair: handlers driven step by step by a LoopDriver, no sockets.
@Suite("In-memory connection pair")
struct InMemoryPairTests {
    /// A writable handler that writes more and closes when the output has drained to nothing: the close
    /// waits for what the handler wrote (a C host feeding a child's standard input does this last).
    @Test func aWritableHandlerThatWritesAndClosesLosesNothing() throws {
        let driver = try LoopDriver()
        var options = ConnectionOptions()
        options.readHighWaterMark = 64
        options.writeHighWaterMark = 100
        options.writeLowWaterMark = 0
        let pair = try InMemoryConnectionPair(driver: driver, options: options)
        let received = Recorder<[UInt8]>()
        pair.server.onRead { bytes in
            received.record(Array(bytes))
            return bytes.count
        }
        let first = (0..<300).map { UInt8(truncatingIfNeeded: $0) }
        let second = (0..<300).map { UInt8(truncatingIfNeeded: $0 &* 3) }
        var wroteTheRest = false
        pair.client.onWritable {
            guard !wroteTheRest else { return }  // told again as what it wrote drains
            wroteTheRest = true
            #expect(throws: Never.self) { try pair.client.write(Bytes(second)) }
            pair.client.close()
        }
        try pair.client.write(Bytes(first))
        #expect(pair.client.bufferedOutputCount > 100)  // above the high-water mark
        _ = try driver.runUntilIdle()
        #expect(wroteTheRest)
        #expect(received.all.flatMap { $0 } == first + second)
    }

    @Test func theEchoHandlerRunsOneStepAtATime() throws {
        let driver = try LoopDriver()
        let pair = try InMemoryConnectionPair(driver: driver)
        echoByCallbacks(pair.server)  // the same handler the socket tests run
        let received = Recorder<[UInt8]>()
        pair.client.onRead { bytes in
            received.record(Array(bytes))
            return bytes.count
        }
        try pair.client.write("ping")
        #expect(pair.server.bufferedInputCount == 0)  // moved at once into its transport, not yet read
        #expect(received.all.isEmpty)
        try driver.step()  // the server reads and its read callback echoes
        #expect(pair.server.bufferedInputCount == 0)
        try driver.step()  // the client's read callback
        #expect(received.all == [Array("ping".utf8)])
    }

    @Test func readingStopsAtTheHighWaterMarkUntilTheHandlerConsumes() throws {
        let driver = try LoopDriver()
        var options = ConnectionOptions()
        options.readHighWaterMark = 1024
        let pair = try InMemoryConnectionPair(driver: driver, options: options)
        let offered = Recorder<Int>()
        pair.server.onRead { bytes in
            offered.record(bytes.count)
            return 0  // never consumes: backpressure
        }
        try pair.client.write(Bytes(Array(repeating: 7, count: 10_000)))
        try driver.step(3)
        #expect(pair.server.bufferedInputCount == 1024)
        #expect(pair.client.bufferedOutputCount == 10_000 - 1024)
        #expect(offered.all.allSatisfy { $0 <= 1024 })
        let consumed = pair.server.consumeBufferedInput { $0.count }
        #expect(consumed == 1024)
        try driver.step(3)
        #expect(pair.server.bufferedInputCount == 1024)
        #expect(pair.client.bufferedOutputCount == 10_000 - 2048)
    }

    @Test func asyncWritesSuspendAboveTheHighWaterMarkUntilThePeerReads() throws {
        let driver = try LoopDriver()
        var options = ConnectionOptions()
        options.readHighWaterMark = 4096
        options.writeHighWaterMark = 4096
        options.writeLowWaterMark = 1024
        let pair = try InMemoryConnectionPair(driver: driver, options: options)
        let outputAfterWrite = Recorder<Int>()
        let server = pair.server
        let writer = Task(executorPreference: driver.loop) {
            for _ in 0..<64 {
                try await server.send(Bytes(Array(repeating: 1, count: 1024)))
                outputAfterWrite.record(server.bufferedOutputCount)
            }
            server.close()
        }
        try driver.step(200)
        // The client never reads: 4 KiB sit in its input, at most the high-water mark in the server's output.
        #expect(pair.client.bufferedInputCount == 4096)
        #expect(pair.server.bufferedOutputCount <= 4096 + 1024)
        let writesDone = outputAfterWrite.all.count
        #expect(writesDone < 64)
        #expect(outputAfterWrite.all.allSatisfy { $0 <= 4096 })
        try driver.step(20)
        #expect(outputAfterWrite.all.count == writesDone)  // still suspended: demand, not time, moves it

        let total = Recorder<Int>()
        let client = pair.client
        let reader = Task(executorPreference: driver.loop) {
            var count = 0
            for try await chunk in client.inbound { count += chunk.count }
            total.record(count)
        }
        for _ in 0..<2_000 where total.all.isEmpty { try driver.step() }
        #expect(total.all == [64 * 1024])
        #expect(outputAfterWrite.all.count == 64)
        _ = writer
        _ = reader
    }

    @Test func closingOneEndEndsBothOnceWithTheirReasons() throws {
        let driver = try LoopDriver()
        let pair = try InMemoryConnectionPair(driver: driver)
        let reasons = Recorder<String>()
        pair.client.onClose { reasons.record("client: \($0)") }
        pair.server.onClose { reasons.record("server: \($0)") }
        pair.client.close()
        try driver.step(5)
        pair.client.close()
        pair.server.abort()
        try driver.step(5)
        #expect(reasons.all == ["client: closed locally", "server: closed by the peer"])
    }

    @Test func aSecondInboundConsumerWhileOneWaitsStopsTheProcess() async throws {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let driver = try! LoopDriver()
            let server = try! InMemoryConnectionPair(driver: driver).server
            for _ in 0..<2 { Task(executorPreference: driver.loop) { for try await _ in server.inbound {} } }
            _ = try! driver.step(2)
        }
        let message = String(decoding: try #require(result).standardErrorContent, as: UTF8.self)
        #expect(message.contains("Connection.inbound has one consumer at a time"))
    }
}
