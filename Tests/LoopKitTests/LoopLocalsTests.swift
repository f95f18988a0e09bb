import LoopKit
import LoopKitTesting
import Testing

/// Values that belong to a loop (`EventLoop.localValue(for:_:)`), found again by key on the loop's thread.
@Suite("Loop-local values")
struct LoopLocalsTests {
    final class Box {
        let number: Int
        init(_ number: Int) { self.number = number }
    }

    struct First {}
    struct Second {}

    @Test func aValueIsMadeOncePerKeyAndFoundAgainWhicheverWasAskedForLast() throws {
        let driver = try LoopDriver()
        let loop = driver.loop
        var made = 0
        func value(_ key: Any.Type, _ number: Int) -> Box {
            loop.localValue(for: ObjectIdentifier(key)) {
                made += 1
                return Box(number)
            }
        }
        #expect(value(First.self, 1).number == 1)
        #expect(value(First.self, 9).number == 1)
        #expect(value(Second.self, 2).number == 2)
        #expect(value(First.self, 9).number == 1)
        #expect(value(Second.self, 9).number == 2)
        #expect(made == 2)
    }

    @Test func aRemovedValueIsMadeAgain() throws {
        let driver = try LoopDriver()
        let loop = driver.loop
        let key = ObjectIdentifier(First.self)
        #expect(loop.localValue(for: key) { Box(1) }.number == 1)
        loop.removeLocalValue(for: key)  // the value asked for last
        #expect(loop.localValue(for: key) { Box(2) }.number == 2)
        _ = loop.localValue(for: ObjectIdentifier(Second.self)) { Box(3) }
        loop.removeLocalValue(for: key)  // not the value asked for last
        #expect(loop.localValue(for: key) { Box(4) }.number == 4)
    }
}
