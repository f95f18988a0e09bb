import LoopKit
import LoopKitNet
import LoopKitNetTesting
import LoopKitTesting
import Testing

/// `write(copying:_:)`: a head and a body (a frame header and its payload) written as one, with one
/// `writev`; only what the peer did not take is copied and queued, in order.
@Suite("Two-part copied writes")
struct TwoPartWriteTests {
    let head = Array("HEAD:".utf8)
    let body = (0..<3000).map { UInt8(truncatingIfNeeded: $0 &* 7) }

    /// Writes head and body on a pair whose server takes `room` bytes at a time; returns what the client
    /// had still queued after the write and everything the server received once it read it all.
    func exchange(room: Int) throws -> (queued: Int, received: [UInt8]) {
        let driver = try LoopDriver()
        var options = ConnectionOptions()
        options.readHighWaterMark = room
        let pair = try InMemoryConnectionPair(driver: driver, options: options)
        let received = Recorder<[UInt8]>()
        pair.server.onRead { bytes in
            received.record(Array(bytes))
            return bytes.count
        }
        try head.withUnsafeBytes { head in
            try body.withUnsafeBytes { body in try pair.client.write(copying: head, body) }
        }
        let queued = pair.client.bufferedOutputCount
        _ = try driver.runUntilIdle()
        return (queued, received.all.flatMap { $0 })
    }

    @Test func headAndBodyArriveInOrder() throws {
        let (queued, received) = try exchange(room: 64 * 1024)
        #expect(queued == 0)
        #expect(received == head + body)
    }

    /// The peer takes part of the head, or the head and part of the body: the rest is queued, once.
    @Test func onlyWhatThePeerDidNotTakeIsQueued() throws {
        for room in [3, head.count, 1000] {
            let (queued, received) = try exchange(room: room)
            #expect(queued == head.count + body.count - room, "room \(room)")
            #expect(received == head + body, "room \(room)")
        }
    }
}
