import LoopKit
import LoopKitNet
import LoopKitNetTesting
import LoopKitTesting
import Testing

/// `write(reservingCapacity:_:)`: bytes serialised straight into output space. Inside a read handler that
/// is the loop's write batch, sent with the handler's other writes; outside one, with nothing queued, the
/// loop's write batch for one write, sent at once, only what the peer did not take copied and queued.
@Suite("Reserved writes")
struct ReservedWriteTests {
    let first = (0..<3000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
    let second = Array("and then some".utf8)

    /// Serialises `bytes` through a reserved write of `capacity` (at least their count).
    static func writeReserved(_ bytes: [UInt8], capacity: Int? = nil, on connection: Connection) throws {
        try connection.write(reservingCapacity: capacity ?? bytes.count) { buffer in
            bytes.withUnsafeBytes { buffer.copyMemory(from: $0) }
            return bytes.count
        }
    }

    /// A pair whose server takes `room` bytes at a time and records each read.
    func pair(room: Int) throws -> (driver: LoopDriver, pair: InMemoryConnectionPair, reads: Recorder<[UInt8]>) {
        let driver = try LoopDriver()
        var options = ConnectionOptions()
        options.readHighWaterMark = room
        let pair = try InMemoryConnectionPair(driver: driver, options: options)
        let reads = Recorder<[UInt8]>()
        pair.server.onRead { bytes in
            reads.record(Array(bytes))
            return bytes.count
        }
        return (driver, pair, reads)
    }

    @Test func aReservedWriteOutsideAReadHandlerIsSentAtOnce() throws {
        let (driver, pair, reads) = try pair(room: 64 * 1024)
        try Self.writeReserved(first, capacity: first.count + 100, on: pair.client)  // room to spare: only what was written goes
        #expect(pair.client.bufferedOutputCount == 0)
        _ = try driver.runUntilIdle()
        #expect(reads.all.flatMap { $0 } == first)
    }

    /// The peer takes part of it: the rest is copied and queued, once, and arrives in order.
    @Test func onlyWhatThePeerDidNotTakeIsQueued() throws {
        for room in [3, 1000] {
            let (driver, pair, reads) = try pair(room: room)
            try Self.writeReserved(first, on: pair.client)
            #expect(pair.client.bufferedOutputCount == first.count - room, "room \(room)")
            _ = try driver.runUntilIdle()
            #expect(reads.all.flatMap { $0 } == first, "room \(room)")
        }
    }

    /// Output already queued goes first: a reserved write after it waits behind it.
    @Test func aReservedWriteKeepsItsPlaceBehindQueuedOutput() throws {
        let (driver, pair, reads) = try pair(room: 1000)
        try pair.client.write(Bytes(first))
        try Self.writeReserved(second, on: pair.client)
        #expect(pair.client.bufferedOutputCount == first.count + second.count - 1000)
        _ = try driver.runUntilIdle()
        #expect(reads.all.flatMap { $0 } == first + second)
    }

    /// A writer that says it wrote more than it reserved is a programmer error: the process stops, saying so.
    @Test func aWriterThatOverstatesWhatItWroteStopsTheProcess() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let driver = try! LoopDriver()
            let pair = try! InMemoryConnectionPair(driver: driver, options: ConnectionOptions())
            try! pair.client.write(reservingCapacity: 8) { _ in 9 }
        }
        let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(message.contains("wrote 9 bytes into 8"))
    }

    /// The same behind queued output, where the reserved bytes get storage of their own instead of the batch.
    @Test func aWriterThatOverstatesWhatItWroteBehindQueuedOutputStopsTheProcess() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let driver = try! LoopDriver()
            var options = ConnectionOptions()
            options.readHighWaterMark = 4
            let pair = try! InMemoryConnectionPair(driver: driver, options: options)
            try! pair.client.write(Bytes([1, 2, 3, 4, 5, 6, 7, 8]))
            precondition(pair.client.bufferedOutputCount > 0, "the test needs output queued")
            try! pair.client.write(reservingCapacity: 8) { _ in 9 }
        }
        let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(message.contains("wrote 9 bytes into 8"))
    }

    @Test func aWriterThatReportsNothingSendsNothing() throws {
        let (driver, pair, reads) = try pair(room: 64 * 1024)
        try pair.client.write(reservingCapacity: 64) { _ in 0 }
        #expect(pair.client.bufferedOutputCount == 0)
        _ = try driver.runUntilIdle()
        #expect(reads.all.isEmpty)
        try Self.writeReserved(second, on: pair.client)  // the connection writes on as before
        _ = try driver.runUntilIdle()
        #expect(reads.all.flatMap { $0 } == second)
    }

    /// Inside a read handler, reserved writes join the handler's batch: they go out together, after the
    /// handler returns, in the order written.
    @Test func reservedWritesInsideAReadHandlerGoOutTogether() throws {
        let driver = try LoopDriver()
        let pair = try InMemoryConnectionPair(driver: driver)
        let (first, second, server) = (first, second, pair.server)
        server.onRead { bytes in
            do {
                try Self.writeReserved(first, on: server)
                try Self.writeReserved(second, capacity: 4096, on: server)
            } catch {
                Issue.record("not written: \(error)")
            }
            return bytes.count
        }
        let reads = Recorder<[UInt8]>()
        pair.client.onRead { bytes in
            reads.record(Array(bytes))
            return bytes.count
        }
        try pair.client.write("go")
        _ = try driver.runUntilIdle()
        #expect(reads.all == [first + second])  // one delivery: one write of the batch
    }

    // MARK: Followed by bytes sent by reference (a response head, then its body), and maybe a trailer
    // (a chunk's size line, its data, its CRLF)

    /// Serialises `head` through a reserved write followed by `body` by reference, then `trailer` if any.
    static func writeReserved(_ head: [UInt8], followedBy body: Bytes, then trailer: [UInt8]? = nil,
                              on connection: Connection) throws {
        try connection.write(reservingCapacity: head.count, { buffer in
            head.withUnsafeBytes { buffer.copyMemory(from: $0) }
            return head.count
        }, followedBy: body, then: trailer.map { Bytes($0) })
    }

    /// Each test below runs without a trailer and with one (a chunk's CRLF).
    static let trailers: [[UInt8]?] = [nil, Array("\r\n".utf8)]

    /// Outside a read handler, however much the peer takes at once: what it did not take is queued, and
    /// everything arrives in order, the reserved bytes first, the trailer last.
    @Test(arguments: trailers)
    func aReservedWriteFollowedByBytesSendsThemInOrder(trailer: [UInt8]?) throws {
        for room in [1, 3, 1000, 2000, 64 * 1024] {
            let (driver, pair, reads) = try pair(room: room)
            try Self.writeReserved(second, followedBy: Bytes(first), then: trailer, on: pair.client)
            let sent = second + first + (trailer ?? [])
            #expect(pair.client.bufferedOutputCount == max(0, sent.count - room), "room \(room)")
            _ = try driver.runUntilIdle()
            #expect(reads.all.flatMap { $0 } == sent, "room \(room)")
        }
    }

    /// Output already queued goes first; the reserved bytes, the bytes after them and the trailer wait
    /// behind it.
    @Test(arguments: trailers)
    func aReservedWriteFollowedByBytesKeepsItsPlaceBehindQueuedOutput(trailer: [UInt8]?) throws {
        let (driver, pair, reads) = try pair(room: 1000)
        try pair.client.write(Bytes(first))
        try Self.writeReserved(second, followedBy: Bytes(first), then: trailer, on: pair.client)
        let sent = first + second + first + (trailer ?? [])
        #expect(pair.client.bufferedOutputCount == sent.count - 1000)
        _ = try driver.runUntilIdle()
        #expect(reads.all.flatMap { $0 } == sent)
    }

    /// A writer that reports nothing sends nothing, not even the bytes or the trailer that were to follow it.
    @Test(arguments: trailers)
    func aReservedWriteThatWritesNothingDropsTheBytesAfterIt(trailer: [UInt8]?) throws {
        let (driver, pair, reads) = try pair(room: 64 * 1024)
        try pair.client.write(reservingCapacity: 64, { _ in 0 }, followedBy: Bytes(first), then: trailer.map { Bytes($0) })
        #expect(pair.client.bufferedOutputCount == 0)
        _ = try driver.runUntilIdle()
        #expect(reads.all.isEmpty)
    }

    /// Inside a read handler all join the handler's batch and go out with its other writes, in order.
    @Test(arguments: trailers)
    func aReservedWriteFollowedByBytesInsideAReadHandlerJoinsTheBatch(trailer: [UInt8]?) throws {
        let driver = try LoopDriver()
        let pair = try InMemoryConnectionPair(driver: driver)
        let (first, second, server) = (first, second, pair.server)
        server.onRead { bytes in
            do {
                try Self.writeReserved(second, followedBy: Bytes(first), then: trailer, on: server)
                try Self.writeReserved(second, on: server)
            } catch {
                Issue.record("not written: \(error)")
            }
            return bytes.count
        }
        let reads = Recorder<[UInt8]>()
        pair.client.onRead { bytes in
            reads.record(Array(bytes))
            return bytes.count
        }
        try pair.client.write("go")
        _ = try driver.runUntilIdle()
        #expect(reads.all == [second + first + (trailer ?? []) + second])  // one delivery: one write of the batch
    }
}
