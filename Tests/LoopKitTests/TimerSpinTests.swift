@testable import LoopKit
import Testing

/// `EventLoop.timerSpin`: a loop that wakes early for a timer and watches the clock up to its deadline.
@Suite("Timer spin")
struct TimerSpinTests {
    @Test("timerSpin is zero by default, and clamped to 0…10 ms")
    func clamped() throws {
        let loop = try EventLoop()
        #expect(loop.timerSpin == .zero)
        loop.timerSpin = .microseconds(200)
        #expect(loop.timerSpin == .microseconds(200))
        loop.timerSpin = .seconds(1)
        #expect(loop.timerSpin == .milliseconds(10))
        loop.timerSpin = .milliseconds(-1)
        #expect(loop.timerSpin == .zero)
    }

    @Test("a loop with a timer spin fires each timer in the iteration that woke for it, never before its deadline")
    func firesInTheIterationThatWokeForIt() throws {
        let loop = try EventLoop()
        // A spin longer than half the delay: the loop's wait ends well before each deadline, and without the
        // spin after it the iteration would end with the timer not yet due (two iterations per timer).
        loop.timerSpin = .milliseconds(2)
        var early: [UInt64] = []
        for _ in 0..<10 {
            let fired = Lock<UInt64?>(nil)
            let deadline = loop.clockNanoseconds + 3_000_000
            try loop.schedule(after: .milliseconds(3)) { fired.withLock { $0 = loop.clockNanoseconds } }
            let iterations = loop.iteration
            try loop.runOnce(blocking: true)
            let firedAt = try #require(fired.withLock { $0 }, "the timer fired in the one iteration that waited for it")
            #expect(loop.iteration == iterations + 1)
            if firedAt < deadline { early.append(deadline - firedAt) }
        }
        #expect(early.isEmpty, "timers fired before their deadline by \(early) ns")
    }

    @Test("a loop without a timer spin also fires a timer in the iteration that waited for it")
    func noSpin() throws {
        let loop = try EventLoop()
        let fired = Lock<Bool>(false)
        try loop.schedule(after: .milliseconds(1)) { fired.withLock { $0 = true } }
        try loop.runOnce(blocking: true)
        #expect(fired.withLock { $0 })
    }
}
