import LoopKit
import LoopKitNet
import LoopKitNetTesting
import LoopKitTesting
import Testing

/// One handler per connection: set, replaced with the bytes already read (an upgrade), told of the close
/// once, before the close observers, and let go of.
@Suite("Connection handler")
struct ConnectionHandlerTests {
    /// Takes up to `take` bytes of each lending (all when nil), records what it saw.
    final class Taker: ConnectionHandler {
        let name: String
        let take: Int?
        let log: Recorder<String>
        var onReceive: ((Connection) -> Void)?

        init(_ name: String, take: Int? = nil, log: Recorder<String>) {
            self.name = name
            self.take = take
            self.log = log
        }

        func connection(_ connection: Connection, received bytes: UnsafeRawBufferPointer) -> Int {
            let count = min(take ?? bytes.count, bytes.count)
            log.record("\(name) got \(String(decoding: bytes[..<count], as: UTF8.self))")
            onReceive?(connection)
            return count
        }

        func connection(_ connection: Connection, closedWith reason: CloseReason) {
            log.record("\(name) closed: \(reason)")
        }
    }

    @Test func aReplacedHandlerHandsOverTheBytesItLeftAndIsReleased() throws {
        let driver = try LoopDriver()
        let pair = try InMemoryConnectionPair(driver: driver)
        let log = Recorder<String>()
        var first: Taker? = Taker("http", take: 4, log: log)
        weak let released = first
        let second = Taker("ws", log: log)
        first!.onReceive = { connection in connection.replaceHandler(second) }  // an upgrade, from inside
        pair.server.setHandler(first!)
        first = nil
        try pair.client.write("HEADframes")
        try driver.runUntilIdle()
        #expect(log.all == ["http got HEAD", "ws got frames"])
        #expect(released == nil)
    }

    @Test func theHandlerHearsOfTheCloseOnceBeforeTheObserversAndIsLetGo() throws {
        let driver = try LoopDriver()
        let pair = try InMemoryConnectionPair(driver: driver)
        let log = Recorder<String>()
        var handler: Taker? = Taker("h", log: log)
        weak let released = handler
        pair.server.setHandler(handler!)
        handler = nil
        pair.server.onClose { reason in log.record("observer: \(reason)") }
        pair.server.close()
        try driver.runUntilIdle()
        #expect(log.all == ["h closed: closed locally", "observer: closed locally"])
        #expect(released == nil)
    }

    @Test func settingAHandlerLendsItWhatIsAlreadyBuffered() throws {
        let driver = try LoopDriver()
        let pair = try InMemoryConnectionPair(driver: driver)
        try pair.client.write("early")
        try driver.runUntilIdle()  // read into the server's buffer: nobody takes it yet
        let log = Recorder<String>()
        pair.server.setHandler(Taker("late", log: log))
        try driver.step()
        #expect(log.all == ["late got early"])
    }

    @Test func closuresAreOneHandlerAndAHandlerReplacesThem() throws {
        let driver = try LoopDriver()
        let pair = try InMemoryConnectionPair(driver: driver)
        let log = Recorder<String>()
        pair.server.onRead { bytes in
            log.record("closure got \(bytes.count)")
            return bytes.count
        }
        try pair.client.write("one")
        try driver.runUntilIdle()
        pair.server.setHandler(Taker("object", log: log))
        try pair.client.write("two")
        try driver.runUntilIdle()
        #expect(log.all == ["closure got 3", "object got two"])
    }
}
