import Foundation
import LoopKit
import LoopKitTesting
import Testing

/// Typed serial steps off the loop, with errors, completion and cancellation on the loop.
@Suite("StepSequence")
struct StepSequenceTests {
    /// A driver for the sequence's loop (virtual time) and one worker loop for the steps.
    final class Fixture: Sendable {
        let driver: LoopDriver
        let workers: LoopGroup
        let events = Lock<[String]>([])
        let outcomes = Lock<[String]>([])
        /// A continuation an async step parks on until it is cancelled.
        let pending = Lock<CheckedContinuation<Void, Never>?>(nil)

        init() throws {
            driver = try LoopDriver()
            workers = try LoopGroup(threads: 1, name: "steps-test")
        }

        var loop: EventLoop { driver.loop }
        var worker: EventLoop { workers.loops[0] }

        func log(_ event: String) { events.withLock { $0.append(event) } }
        var log: [String] { events.withLock { $0 } }
        var finals: [String] { outcomes.withLock { $0 } }

        /// Steps the loop (never waiting in its poll) until `condition` holds, yielding the CPU to the
        /// worker between idle iterations. Conditions may depend on the worker as well as the loop.
        func run(until condition: () -> Bool) throws {
            while !condition() {
                if try loop.runOnce(blocking: false) == 0 { sched_yield() }
            }
        }

        func record<T>(_ outcome: StepOutcome<T>) {
            let text: String = switch outcome {
            case .succeeded(let value): "succeeded(\(value))"
            case .failed(let error): "failed(\(error.stepIndex) \(error.stepName) ×\(error.attempts))"
            case .cancelled: "cancelled"
            }
            outcomes.withLock { $0.append(text) }
        }
    }

    @Test("steps run one after another on the target, each receiving the previous result")
    func serialResultPassing() throws {
        let f = try Fixture()
        let loop = f.loop, worker = f.worker
        let run = StepSequence(on: loop, target: worker)
            .then("one") { () -> Int in
                f.log("one on worker: \(worker.isCurrent), on loop: \(loop.isCurrent)")
                return 1
            }
            .then("two") { (n: Int) -> String in
                f.log("two got \(n)")
                return "\(n + 1)"
            }
            .then("three") { (s: String) -> [String] in
                f.log("three got \(s)")
                return [s, s]
            }
            .finally { outcome in
                f.log("finally on loop: \(loop.isCurrent)")
                f.record(outcome)
            }
            .start()
        try f.run { run.isFinished }
        #expect(f.log == ["one on worker: true, on loop: false", "two got 1", "three got 2", "finally on loop: true"])
        #expect(f.finals == [#"succeeded(["2", "2"])"#])
    }

    @Test("a failing step stops the sequence: later steps never start; the handlers run once, on the loop")
    func errorPath() throws {
        struct Boom: Error {}
        let f = try Fixture()
        let loop = f.loop
        let run = StepSequence(on: loop, target: f.worker)
            .then("fine") { f.log("fine") }
            .then("explodes") { () throws -> Int in throw Boom() }
            .then("never") { (_: Int) in f.log("never") }
            .onError { error in
                f.log("error \(error.stepIndex):\(error.stepName) on loop \(loop.isCurrent) boom \(error.underlyingError is Boom)")
            }
            .finally { f.record($0) }
            .start()
        try f.run { run.isFinished }
        try f.driver.step(3)
        #expect(f.log == ["fine", "error 1:explodes on loop true boom true"])
        #expect(f.finals == ["failed(1 explodes ×1)"])
    }

    @Test("cancel before the first step starts: no step runs, cancellation is reported once")
    func cancelBeforeStart() throws {
        let f = try Fixture()
        let run = StepSequence(on: f.loop, target: f.worker)
            .then { f.log("step") }
            .onError { _ in f.log("error handler") }
            .finally { f.record($0) }
            .start()
        run.cancel()
        run.cancel()
        try f.run { run.isFinished }
        try f.driver.step(2)
        #expect(f.log.isEmpty)
        #expect(f.finals == ["cancelled"])
    }

    @Test("cancel during a synchronous step: it finishes, the next step never starts")
    func cancelDuringStep() throws {
        let f = try Fixture()
        let entered = DispatchSemaphore(value: 0), proceed = DispatchSemaphore(value: 0)
        let run = StepSequence(on: f.loop, target: f.worker)
            .then("long") { () -> Int in
                entered.signal()
                proceed.wait()
                f.log("long finished")
                return 1
            }
            .then("next") { (_: Int) in f.log("next") }
            .finally { f.record($0) }
            .start()
        try f.driver.step()  // starts "long" on the worker
        entered.wait()
        run.cancel()
        try f.run { run.isFinished }
        proceed.signal()
        try f.workers.next().invokeAndWait {}  // "long" has returned on the worker
        try f.driver.step(2)
        #expect(f.log == ["long finished"])
        #expect(f.finals == ["cancelled"])
    }

    @Test("cancel between attempts (during a retry backoff): no further attempt starts")
    func cancelBetweenSteps() throws {
        struct Flaky: Error {}
        let f = try Fixture()
        let attempts = Lock(0)
        let run = StepSequence(on: f.loop, target: f.worker)
            .then("flaky", retry: .attempts(3, backoff: .milliseconds(5))) { () throws in
                attempts.withLock { $0 += 1 }
                throw Flaky()
            }
            .finally { f.record($0) }
            .start()
        try f.run { attempts.withLock { $0 } == 1 && !f.driver.hasPendingWork && f.loop.nextTimerDeadline != nil }
        run.cancel()
        try f.driver.advance(by: .milliseconds(50))
        let made = attempts.withLock { $0 }
        #expect(made == 1)
        #expect(f.finals == ["cancelled"])
    }

    @Test("cancelling after the end does nothing")
    func cancelAfterEnd() throws {
        let f = try Fixture()
        let run = StepSequence(on: f.loop, target: f.worker).then { 7 }.finally { f.record($0) }.start()
        try f.run { run.isFinished }
        run.cancel()
        try f.driver.step(2)
        #expect(f.finals == ["succeeded(7)"])
    }

    @Test("a step that outlives its timeout fails with timedOut, and its callback sees cancellation")
    func timeout() throws {
        let f = try Fixture()
        let sawCancel = Lock(false)
        let run = StepSequence(on: f.loop, target: f.worker)
            .thenCallback("hangs", timeout: .milliseconds(10)) { (_: Void, done: StepCallback<Int>) in
                done.onCancel { sawCancel.withLock { $0 = true } }
                f.log("started")  // never calls done
            }
            .onError { error in
                if case .timedOut(let limit) = error.reason { f.log("timed out after \(limit)") }
            }
            .finally { f.record($0) }
            .start()
        try f.run { f.log == ["started"] }
        try f.driver.advance(by: .milliseconds(9))
        #expect(!run.isFinished)
        try f.driver.advance(by: .milliseconds(1))
        #expect(run.isFinished)
        #expect(f.log == ["started", "timed out after 0.01 seconds"])
        #expect(f.finals == ["failed(0 hangs ×1)"])
        let sawIt = sawCancel.withLock { $0 }
        #expect(sawIt)
    }

    @Test("retry: a step that fails twice then succeeds completes the sequence")
    func retryThenSuccess() throws {
        struct Flaky: Error {}
        let f = try Fixture()
        let attempts = Lock(0)
        let run = StepSequence(on: f.loop, target: f.worker)
            .then("flaky", retry: .attempts(3, backoff: .milliseconds(2))) { () throws -> String in
                let n = attempts.withLock { $0 += 1; return $0 }
                if n < 3 { throw Flaky() }
                return "third time"
            }
            .finally { f.record($0) }
            .start()
        while !run.isFinished {
            try f.run { !f.driver.hasPendingWork && (run.isFinished || f.loop.nextTimerDeadline != nil) }
            if !run.isFinished { try f.driver.advance(by: .milliseconds(4)) }
        }
        let made = attempts.withLock { $0 }
        #expect(made == 3)
        #expect(f.finals == ["succeeded(third time)"])
    }

    @Test("retry exhausted: the error names the step and counts the attempts")
    func retryExhausted() throws {
        struct Down: Error {}
        let f = try Fixture()
        let run = StepSequence(on: f.loop, target: f.worker)
            .then("ok") { 1 }
            .then("down", retry: .attempts(2, backoff: .milliseconds(1))) { (_: Int) throws -> Int in throw Down() }
            .finally { f.record($0) }
            .start()
        while !run.isFinished {
            try f.run { !f.driver.hasPendingWork && (run.isFinished || f.loop.nextTimerDeadline != nil) }
            if !run.isFinished { try f.driver.advance(by: .milliseconds(1)) }
        }
        #expect(f.finals == ["failed(1 down ×2)"])
    }

    @Test("async steps run as tasks on the target and see task cancellation")
    func asyncSteps() throws {
        let f = try Fixture()
        let worker = f.worker
        let cancelled = Lock(false)
        let run = StepSequence(on: f.loop, target: worker)
            .then("async") { () async -> Int in worker.isCurrent ? 41 : -1 }
            .then("waits") { (n: Int) async throws -> Int in
                f.log("waiting with \(n)")
                await withTaskCancellationHandler {
                    await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                        f.pending.withLock { $0 = c }
                    }
                } onCancel: {
                    cancelled.withLock { $0 = true }
                    f.pending.withLock { $0 }?.resume()
                }
                try Task.checkCancellation()
                return n + 1
            }
            .finally { f.record($0) }
            .start()
        try f.run { f.log == ["waiting with 41"] && f.pending.withLock { $0 } != nil }
        run.cancel()
        try f.run { run.isFinished }
        #expect(f.finals == ["cancelled"])
        spin { cancelled.withLock { $0 } }
    }

    @Test("a callback step that completes twice is reported, not crashed on")
    func callbackCompletesTwice() throws {
        let f = try Fixture()
        let diagnostics = Lock<[String]>([])
        let run = StepSequence(on: f.loop, target: f.worker)
            .onDiagnostic { message in diagnostics.withLock { $0.append(message) } }
            .thenCallback("twice") { (_: Void, done: StepCallback<Int>) in
                done.succeed(1)
                done.succeed(2)
            }
            .finally { f.record($0) }
            .start()
        try f.run { run.isFinished && !diagnostics.withLock { $0.isEmpty } }
        #expect(f.finals == ["succeeded(1)"])
        let reported = diagnostics.withLock { $0 }
        #expect(reported.first?.contains("'twice' completed more than once") == true)
    }

    @Test("100,000 trivial steps complete without growing the stack")
    func manySteps() throws {
        let f = try Fixture()
        var sequence = StepSequence(on: f.loop, target: f.worker).then { 0 }
        for _ in 0..<99_999 { sequence = sequence.then { $0 + 1 } }
        let run = sequence.finally { f.record($0) }.start()
        try f.run { run.isFinished }
        #expect(f.finals == ["succeeded(99999)"])
    }

    @Test("progress advances by each step's weight; cancelling the progress cancels the run")
    func progressWeights() throws {
        let f = try Fixture()
        let gate = DispatchSemaphore(value: 0)
        let fractions = Lock<[Double]>([])
        let run = StepSequence(on: f.loop, target: f.worker)
            .then("light", weight: 1) { 1 }
            .then("heavy", weight: 3) { (n: Int) in n + 1 }
            .then("blocked", weight: 4) { (n: Int) -> Int in
                gate.wait()
                return n
            }
            .finally { f.record($0) }
            .start()
        let progress = run.progress
        #expect(progress.totalUnitCount == 8)
        try f.run { progress.completedUnitCount == 1 }
        fractions.withLock { $0.append(progress.fractionCompleted) }
        try f.run { progress.completedUnitCount == 4 }
        fractions.withLock { $0.append(progress.fractionCompleted) }
        progress.cancel()
        gate.signal()
        try f.run { run.isFinished }
        let seen = fractions.withLock { $0 }
        #expect(seen == [0.125, 0.5])
        #expect(f.finals == ["cancelled"])
    }

    @Test("two sequences built from one prefix keep their own steps")
    func branchingBuilders() throws {
        let f = try Fixture()
        let prefix = StepSequence(on: f.loop, target: f.worker).then { 1 }
        let doubled = prefix.then { $0 * 2 }.finally { f.record($0) }
        let negated = prefix.then { -$0 }.then { $0 - 1 }.finally { f.record($0) }
        let first = doubled.start()
        try f.run { first.isFinished }
        let second = negated.start()
        try f.run { second.isFinished }
        #expect(f.finals == ["succeeded(2)", "succeeded(-2)"])
    }

    @Test("run() returns the last result, throws StepError, and maps task cancellation")
    func asyncRun() async throws {
        let group = try LoopGroup(threads: 2)
        defer { group.shutdown() }
        let loop = group.loops[0], worker = group.loops[1]
        let value = try await StepSequence(on: loop, target: worker).then { 20 }.then { $0 + 22 }.run()
        #expect(value == 42)
        struct Nope: Error {}
        await #expect(throws: StepError.self) {
            try await StepSequence(on: loop, target: worker).then { () throws in throw Nope() }.run()
        }
    }

    @Test("the process-wide default target runs steps that name none")
    func defaultTarget() throws {
        let f = try Fixture()
        let other = try LoopGroup(threads: 1, name: "default-steps")
        defer { other.shutdown() }
        let target = other.loops[0]
        StepSequence.setDefaultTarget(target)
        let run = StepSequence(on: f.loop).then { target.isCurrent }.finally { f.record($0) }.start()
        try f.run { run.isFinished }
        #expect(f.finals == ["succeeded(true)"])
    }
}

