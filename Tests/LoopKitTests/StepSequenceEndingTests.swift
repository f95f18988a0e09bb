import Foundation
import LoopKit
import LoopKitTesting
import Testing

/// Every way a step sequence's run ends resumes an awaiting `run()` exactly once and calls `finally`
/// exactly once: a shut-down loop, a shut-down target, cancellation, failure, success, and the loop
/// shutting down mid-run (a step running, a retry waiting, a timeout pending).
@Suite("StepSequence endings")
struct StepSequenceEndingTests {
    typealias Fixture = StepSequenceTests.Fixture

    /// Counts `finally` calls and keeps the last outcome's description.
    final class Endings: Sendable {
        private let state = Lock<(count: Int, last: String)>((0, ""))

        func record<T>(_ outcome: StepOutcome<T>) {
            let text: String = switch outcome {
            case .succeeded(let value): "succeeded(\(value))"
            case .failed(let error): "failed(\(error.stepIndex) \(error.stepName) \(error.reason))"
            case .cancelled: "cancelled"
            }
            state.withLock { $0 = ($0.count + 1, text) }
        }

        var count: Int { state.withLock { $0.count } }
        var last: String { state.withLock { $0.last } }
    }

    /// What `run()` did: returned a value or threw, described.
    static func awaitRun<T: Sendable>(_ body: () async throws -> T) async -> String {
        do { return "returned \(try await body())" } catch let error as StepError {
            return "threw \(error.reason)"
        } catch is CancellationError {
            return "threw CancellationError"
        } catch {
            return "threw \(error)"
        }
    }

    @Test("run() on a loop that has shut down ends at once as failed: loopShutDown, finally once, no step")
    func runOnShutDownLoopFailsAtOnce() async throws {
        let group = try LoopGroup(threads: 2)
        defer { group.shutdown() }
        let loop = group.loops[0], worker = group.loops[1]
        loop.shutdown()
        let endings = Endings()
        let ran = Lock(false)
        let result = await Self.awaitRun {
            try await StepSequence(on: loop, target: worker)
                .then { ran.withLock { $0 = true } }
                .finally { endings.record($0) }
                .run()
        }
        #expect(result == "threw loopShutDown")
        #expect(endings.count == 1)
        #expect(endings.last == "failed(0 step 0 loopShutDown)")
        #expect(ran.withLock { $0 } == false)
    }

    @Test("start() on a shut-down loop reports the failure before it returns, on the calling thread")
    func startOnShutDownLoopReportsAtOnce() throws {
        let f = try Fixture()
        f.loop.shutdown()
        let endings = Endings()
        let failures = Lock(0)
        let run = StepSequence(on: f.loop, target: f.worker)
            .then("first") { 1 }
            .onError { _ in failures.withLock { $0 += 1 } }
            .finally { endings.record($0) }
            .start()
        #expect(run.isFinished)
        #expect(endings.count == 1)
        #expect(endings.last == "failed(0 first loopShutDown)")
        #expect(failures.withLock { $0 } == 1)
        run.cancel()  // too late: nothing more is reported
        #expect(endings.count == 1)
    }

    @Test("run() whose target has shut down fails with targetShutDown, finally once")
    func runWithShutDownTargetFails() async throws {
        let group = try LoopGroup(threads: 2)
        defer { group.shutdown() }
        let loop = group.loops[0], worker = group.loops[1]
        worker.shutdown()
        let endings = Endings()
        let result = await Self.awaitRun {
            try await StepSequence(on: loop, target: worker).then("w") { 1 }.finally { endings.record($0) }.run()
        }
        #expect(result == "threw targetShutDown")
        #expect(endings.count == 1)
    }

    @Test("run() that succeeds returns once and calls finally once")
    func runThatSucceedsEndsOnce() async throws {
        let group = try LoopGroup(threads: 2)
        defer { group.shutdown() }
        let endings = Endings()
        let result = await Self.awaitRun {
            try await StepSequence(on: group.loops[0], target: group.loops[1])
                .then { 41 }.then { $0 + 1 }.finally { endings.record($0) }.run()
        }
        #expect(result == "returned 42")
        #expect(endings.count == 1)
        #expect(endings.last == "succeeded(42)")
    }

    @Test("run() that fails throws once and calls finally once")
    func runThatFailsEndsOnce() async throws {
        struct Broken: Error {}
        let group = try LoopGroup(threads: 2)
        defer { group.shutdown() }
        let endings = Endings()
        let result = await Self.awaitRun {
            try await StepSequence(on: group.loops[0], target: group.loops[1])
                .then("bad") { () throws -> Int in throw Broken() }.finally { endings.record($0) }.run()
        }
        #expect(result.hasPrefix("threw failed"))
        #expect(endings.count == 1)
    }

    @Test("run() cancelled while a step runs throws CancellationError once and calls finally once")
    func runThatIsCancelledEndsOnce() async throws {
        let group = try LoopGroup(threads: 2)
        defer { group.shutdown() }
        let endings = Endings()
        let started = DispatchSemaphore(value: 0)
        let task = Task {
            await Self.awaitRun {
                try await StepSequence(on: group.loops[0], target: group.loops[1])
                    .thenCallback("parked") { (_: Void, done: StepCallback<Int>) in
                        done.onCancel { done.succeed(0) }
                        started.signal()
                    }
                    .finally { endings.record($0) }
                    .run()
            }
        }
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async { started.wait(); continuation.resume() }
        }
        task.cancel()
        #expect(await task.value == "threw CancellationError")
        #expect(endings.count == 1)
        #expect(endings.last == "cancelled")
    }

    @Test("run() in a task cancelled before the call throws CancellationError before the first step")
    func runInCancelledTaskThrowsBeforeFirstStep() async throws {
        let group = try LoopGroup(threads: 2)
        defer { group.shutdown() }
        let ran = Lock(0)
        let endings = Endings()
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return await Self.awaitRun {
                try await StepSequence(on: group.loops[0], target: group.loops[1])
                    .then { ran.withLock { $0 += 1 } }
                    .then { ran.withLock { $0 += 1 } }
                    .finally { endings.record($0) }
                    .run()
            }
        }
        #expect(await task.value == "threw CancellationError")
        #expect(ran.withLock { $0 } == 0)
        #expect(endings.count == 0)  // the run never started
    }

    @Test("loop shut down while a step runs on the target: the result can't come back, the run fails once")
    func loopShutDownWhileStepRuns() async throws {
        let group = try LoopGroup(threads: 2)
        defer { group.shutdown() }
        let loop = group.loops[0], worker = group.loops[1]
        let endings = Endings()
        let started = DispatchSemaphore(value: 0)
        let proceed = DispatchSemaphore(value: 0)
        let task = Task {
            await Self.awaitRun {
                try await StepSequence(on: loop, target: worker)
                    .then("slow") { () -> Int in
                        started.signal()
                        proceed.wait()
                        return 1
                    }
                    .then("next") { $0 + 1 }
                    .finally { endings.record($0) }
                    .run()
            }
        }
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async { started.wait(); continuation.resume() }
        }
        loop.shutdown()
        proceed.signal()
        #expect(await task.value == "threw loopShutDown")
        #expect(endings.count == 1)
        #expect(endings.last == "failed(0 slow loopShutDown)")
    }

    @Test("loop shut down during a retry backoff: the dropped retry timer ends the run as failed, once")
    func loopShutDownDuringRetryBackoff() throws {
        struct Flaky: Error {}
        let f = try Fixture()
        let endings = Endings()
        let attempts = Lock(0)
        let run = StepSequence(on: f.loop, target: f.worker)
            .then("flaky", retry: .attempts(3, backoff: .milliseconds(5))) { () throws in
                attempts.withLock { $0 += 1 }
                throw Flaky()
            }
            .finally { endings.record($0) }
            .start()
        try f.run { attempts.withLock { $0 } == 1 && !f.driver.hasPendingWork && f.loop.nextTimerDeadline != nil }
        f.loop.shutdown()
        #expect(run.isFinished)
        #expect(endings.count == 1)
        #expect(endings.last == "failed(0 flaky loopShutDown)")
        #expect(attempts.withLock { $0 } == 1)
    }

    @Test("loop shut down while a step's timeout is pending: the run fails once instead of waiting forever")
    func loopShutDownDuringTimeout() throws {
        let f = try Fixture()
        let endings = Endings()
        let sawCancel = Lock(false)
        let run = StepSequence(on: f.loop, target: f.worker)
            .thenCallback("never", timeout: .seconds(60)) { (_: Void, done: StepCallback<Int>) in
                done.onCancel { sawCancel.withLock { $0 = true } }
                f.log("started")  // never calls done
            }
            .finally { endings.record($0) }
            .start()
        try f.run { f.log == ["started"] }
        f.loop.shutdown()
        #expect(run.isFinished)
        #expect(endings.count == 1)
        #expect(endings.last == "failed(0 never loopShutDown)")
        #expect(sawCancel.withLock { $0 })
    }

    @Test("cancel() after the loop shut down mid-run reports the cancellation once, at once")
    func cancelAfterLoopShutDown() throws {
        let f = try Fixture()
        let endings = Endings()
        let run = StepSequence(on: f.loop, target: f.worker)
            .thenCallback("parked") { (_: Void, _: StepCallback<Int>) in f.log("started") }
            .finally { endings.record($0) }
            .start()
        try f.run { f.log == ["started"] }
        f.loop.shutdown()  // no timer, no queued work: nothing ends the run by itself
        #expect(!run.isFinished)
        run.cancel()
        #expect(run.isFinished)
        #expect(endings.count == 1)
        #expect(endings.last == "cancelled")
    }
}
