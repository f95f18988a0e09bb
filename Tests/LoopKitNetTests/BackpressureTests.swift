import LoopKit
import LoopKitNet
import LoopKitNetTesting
import LoopKitTesting
import Testing

/// Memory stays within the watermarks while a peer never reads or a handler never consumes (asserted on
/// buffered byte counts, never on time).
@Suite("Backpressure over sockets, both directions")
struct BackpressureTests {
    @Test func aHandlerThatNeverConsumesStopsTheSocketBeingRead() async throws {
        let group = try LoopGroup(threads: 1)
        defer { group.shutdown() }
        var options = ListenerOptions()
        options.connection.readHighWaterMark = 8 * 1024
        let server = Recorder<Connection>()
        let listener = try TCPListener.bind(host: "127.0.0.1", port: 0, on: group.loops[0], options: options, onAccept: { connection in
            server.record(connection)
            connection.onRead { _ in 0 }
        })
        let loop = group.loops[0]
        let total = 32 * 1024 * 1024
        let client = try await onLoop(loop) { () async throws -> Connection in
            let client = try await Connection.connect(to: listener.localAddress, on: loop)
            let writeAll = { () throws in try client.write(Bytes(Array(repeating: 9, count: total))) }  // the sync write
            try writeAll()  // more than the kernel's buffers hold
            return client
        }
        var reached = false
        for _ in 0..<20_000 where !reached {
            reached = try await read(on: loop) { server.all.first?.bufferedInputCount ?? 0 } == 8 * 1024
            if !reached { try await Task.sleep(for: .milliseconds(1)) }
        }
        #expect(reached)
        // The client's output stops moving once the kernel buffers are full: the rest waits on the client.
        var previous = -1
        while true {
            try await Task.sleep(for: .milliseconds(20))
            let pending = try await read(on: loop) { client.bufferedOutputCount }
            if pending == previous { break }
            previous = pending
        }
        #expect(previous > 0)
        #expect(try await read(on: loop) { server.all.first?.bufferedInputCount } == 8 * 1024)
        try await read(on: loop) { client.abort() }
        await listener.shutdown()
    }

    @Test func aPeerThatNeverReadsSuspendsTheWriterAtTheHighWaterMark() async throws {
        let group = try LoopGroup(threads: 1)
        defer { group.shutdown() }
        var options = ListenerOptions()
        options.connection.writeHighWaterMark = 64 * 1024
        options.connection.writeLowWaterMark = 16 * 1024
        let outputAfterWrite = Recorder<Int>()
        let finished = Recorder<Bool>()
        let listener = try TCPListener.bind(host: "127.0.0.1", port: 0, on: group.loops[0], options: options) { connection in
            let chunk = Bytes(Array(repeating: 3, count: 16 * 1024))
            for _ in 0..<2_048 {  // 32 MiB: far more than the socket buffers
                try await connection.send(chunk)
                outputAfterWrite.record(connection.bufferedOutputCount)
            }
            finished.record(true)
        }
        let loop = group.loops[0]
        let client = try await onLoop(loop) { () async throws -> Connection in
            let client = try await Connection.connect(to: listener.localAddress, on: loop)
            client.pauseReading()
            return client
        }
        var previous = -1
        while true {  // wait until the writer has stopped making progress
            try await Task.sleep(for: .milliseconds(20))
            let count = outputAfterWrite.all.count
            if count == previous { break }
            previous = count
        }
        #expect(finished.all.isEmpty)
        #expect(outputAfterWrite.all.allSatisfy { $0 <= 64 * 1024 })
        let received = try await onLoop(loop) { () async throws -> Int in
            client.resumeReading()
            var count = 0
            var iterator = client.inbound.makeAsyncIterator()
            while count < 32 * 1024 * 1024, let chunk = try await iterator.next() { count += chunk.count }
            return count
        }
        #expect(received == 32 * 1024 * 1024)
        #expect(await eventually { finished.all == [true] })
        try await read(on: loop) { client.close() }
        await listener.shutdown()
    }

    /// The obvious echo handler, which writes everything it reads and never looks at `isWritable`, holds
    /// no more than the watermarks against a peer that sends and never reads (deterministic: an
    /// in-memory pair stepped by a driver; byte counts, not time).
    @Test func theObviousEchoHandlerStaysWithinTheWatermarksAgainstAPeerThatNeverReads() throws {
        let driver = try LoopDriver()
        var options = ConnectionOptions()
        options.readHighWaterMark = 16 * 1024
        options.writeHighWaterMark = 32 * 1024
        options.writeLowWaterMark = 8 * 1024
        let pair = try InMemoryConnectionPair(driver: driver, options: options)
        echoByCallbacks(pair.server)
        pair.client.pauseReading()  // never reads
        let total = 1024 * 1024
        try pair.client.write(Bytes(Array(repeating: 5, count: total)))
        try driver.step(200)
        // The server stopped reading once its output passed the high-water mark: at most that plus one
        // read's worth is queued, at most the read high-water mark waits unread, the rest stays with the peer.
        #expect(pair.server.bufferedOutputCount > options.writeHighWaterMark)
        #expect(pair.server.bufferedOutputCount <= options.writeHighWaterMark + options.readHighWaterMark)
        #expect(pair.server.bufferedInputCount <= options.readHighWaterMark)
        #expect(pair.client.bufferedOutputCount >= total - 2 * (options.writeHighWaterMark + options.readHighWaterMark))
        try driver.step(50)
        #expect(pair.server.bufferedOutputCount <= options.writeHighWaterMark + options.readHighWaterMark)  // still
        // Once the peer reads, everything comes back.
        var received = 0
        pair.client.onRead { bytes in
            received += bytes.count
            return bytes.count
        }
        pair.client.resumeReading()
        for _ in 0..<10_000 where received < total { try driver.step() }
        #expect(received == total)
    }

    /// `readsWhileOutputIsFull` opts out: the handler then keeps being lent bytes while its output grows.
    @Test func readingWhileTheOutputIsFullIsAnExplicitOptOut() throws {
        let driver = try LoopDriver()
        var options = ConnectionOptions()
        options.readHighWaterMark = 16 * 1024
        options.writeHighWaterMark = 32 * 1024
        options.readsWhileOutputIsFull = true
        let pair = try InMemoryConnectionPair(driver: driver, options: options)
        echoByCallbacks(pair.server)
        pair.client.pauseReading()
        try pair.client.write(Bytes(Array(repeating: 5, count: 1024 * 1024)))
        try driver.step(200)
        #expect(pair.server.bufferedOutputCount == 1024 * 1024)  // all of it read and queued: unbounded
    }

    /// Over real sockets, `LoopDemo echo`'s handler against a client that writes 64 MiB and never reads:
    /// the server's queued output stays within the high-water mark plus one read.
    @Test func theEchoServerHoldsItsOutputBoundedOverSockets() async throws {
        let group = try LoopGroup(threads: 1)
        defer { group.shutdown() }
        let servers = Recorder<Connection>()
        let listener = try TCPListener.bind(host: "127.0.0.1", port: 0, on: group.loops[0], onAccept: { connection in
            servers.record(connection)
            echoByCallbacks(connection)
        })
        let loop = group.loops[0]
        let client = try await onLoop(loop) { () async throws -> Connection in
            let client = try await Connection.connect(to: listener.localAddress, on: loop)
            client.pauseReading()
            try client.write(Bytes(Array(repeating: 1, count: 64 * 1024 * 1024)))
            return client
        }
        #expect(await eventually { !servers.all.isEmpty })
        var previous = -1
        while true {  // until the client's output stops moving: both kernels' buffers and the server are full
            try await Task.sleep(for: .milliseconds(20))
            let pending = try await read(on: loop) { client.bufferedOutputCount }
            if pending == previous { break }
            previous = pending
        }
        #expect(previous > 0)
        let server = servers.all[0]
        let options = ConnectionOptions()
        #expect(try await read(on: loop) { server.bufferedOutputCount } <= options.writeHighWaterMark + 64 * 1024)
        #expect(try await read(on: loop) { server.bufferedInputCount } <= options.readHighWaterMark)
        try await read(on: loop) { client.abort() }
        await listener.shutdown()
    }
}
