import LoopKit
import LoopKitNet
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
        let server = Recorder<TCPConnection>()
        let listener = try TCPListener.bind(host: "127.0.0.1", port: 0, on: group.loops[0], options: options, onAccept: { connection in
            server.record(connection)
            connection.onRead { _ in 0 }
        })
        let loop = group.loops[0]
        let total = 32 * 1024 * 1024
        let client = try await onLoop(loop) { () async throws -> TCPConnection in
            let client = try await TCPConnection.connect(to: listener.localAddress, on: loop)
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
        let client = try await onLoop(loop) { () async throws -> TCPConnection in
            let client = try await TCPConnection.connect(to: listener.localAddress, on: loop)
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
}
