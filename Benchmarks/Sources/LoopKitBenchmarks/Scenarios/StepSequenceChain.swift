import Foundation
import LoopKit
import NIOCore
import NIOPosix

/// Issue 5: per-step overhead of a long ``StepSequence`` whose flow loop and step target are two
/// different threads, against a SwiftNIO future chain hopping between two threads the same way.
///
/// LoopKit: a `LoopGroup(threads: 2)`; `loops[0]` controls the sequence, `loops[1]` runs the steps. The
/// sequence is `n` trivial steps (the first `{ _ in 1 }`, then `{ $0 &+ 1 }`), built before the clock
/// starts; the time runs from `start()` (on this thread) until `finally` runs on `loops[0]`.
/// Per step: loop 0 queues the step on loop 1, loop 1 runs it and queues its result back on loop 0.
///
/// SwiftNIO: a `MultiThreadedEventLoopGroup(numberOfThreads: 2)`, loops A and B, the chain built before
/// the clock starts on an unfulfilled promise of A; the time runs from fulfilling it (on this thread)
/// until the chain's last future completes on A. Two shapes, both with two cross-thread hand-offs per
/// step like LoopKit's:
/// - the goal's peer, prebuilt like LoopKit's step list: `n` times `.hop(to: B).map { $0 &+ 1 }.hop(to: A)`;
/// - a `flatMap` chain on A whose closure, at run time, queues the step on B with `B.execute` and returns
///   an A promise that B fulfils (what LoopKit's engine does, futures allocated while running).
enum StepSequenceChain {
    static let hopPeer = "NIO hop(B).map.hop(A) chain"
    static let flatMapPeer = "NIO flatMap { B.execute → A promise }"

    static func run(_ options: Options) throws -> [Row] {
        let n = options.count(100_000, quick: 10_000)

        let workers = try LoopGroup(threads: 2, name: "bench-steps")
        let control = workers.loops[0]
        let target = workers.loops[1]

        // Build costs, recorded by the timed bodies (the first sample of each is the warm-up's).
        let builds = BuildSamples()

        var comparison = Comparison(options)
        comparison.loopKit("LoopKit", operations: n) {
            let finish = Finish()
            let buildStart = monotonicNanoseconds()
            let ready = buildLoopKit(control, target, n, finish)
            builds.loopKit.append(Double(monotonicNanoseconds() - buildStart) / Double(n))
            let start = monotonicNanoseconds()
            let running = ready.start()
            let end = finish.wait()
            check(running.isFinished, "LoopKit sequence signalled before finishing")
            return end - start
        }

        let nio = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        let nioLoops = Array(nio.makeIterator())
        let loopA = nioLoops[0]
        let loopB = nioLoops[1]
        check(loopA !== loopB, "NIO group gave one loop twice")

        comparison.peer(hopPeer, operations: n) {
            let finish = Finish()
            let buildStart = monotonicNanoseconds()
            // Built on A: each `hop(to: B)` registers on an A future inline; each `map`/`hop(to: A)` on a
            // B future is registered by a job sent to B, so B is drained before the clock starts.
            let promise = try buildHopChain(loopA, loopB, n, finish)
            builds.hop.append(Double(monotonicNanoseconds() - buildStart) / Double(n))
            let start = monotonicNanoseconds()
            promise.succeed(0)
            return finish.wait() - start
        }

        comparison.peer(flatMapPeer, operations: n) {
            let finish = Finish()
            let buildStart = monotonicNanoseconds()
            let promise = try buildFlatMapChain(loopA, loopB, n, finish)
            builds.flatMap.append(Double(monotonicNanoseconds() - buildStart) / Double(n))
            let start = monotonicNanoseconds()
            promise.succeed(0)
            return finish.wait() - start
        }

        let figures = try comparison.run()
        workers.shutdown()
        try nio.syncShutdownGracefully()

        func buildFigure(_ samples: [Double]) -> Figure? {
            let timed = Array(samples.dropFirst())  // the warm-up's
            return timed.isEmpty ? nil : Figure(median: median(timed), samples: timed)
        }
        var buildPeers: [(name: String, figure: Figure)] = []
        if let hop = buildFigure(builds.hop) { buildPeers.append((name: "NIO hop chain, built on A", figure: hop)) }
        if let flat = buildFigure(builds.flatMap) {
            buildPeers.append((name: "NIO flatMap chain, built on A", figure: flat))
        }
        return [
            Row(scenario: "step sequence, per step (flow loop ≠ step target)", unit: .nanoseconds,
                loopKit: figures["LoopKit"],
                peers: figures.peers(hopPeer, flatMapPeer),
                goal: .noSlowerThan(peer: hopPeer),
                note: "\(n) trivial steps ({ $0 &+ 1 }) on LoopGroup(threads: 2): loops[0] runs the flow and "
                    + "finally, loops[1] the steps; timed from start() on the main thread until finally runs, the "
                    + "build excluded (next row). NIO on MultiThreadedEventLoopGroup(numberOfThreads: 2), the "
                    + "chain built on an unfulfilled promise of A, timed from succeeding it until the last future "
                    + "completes on A. The goal's peer is the prebuilt hop(to: B).map.hop(to: A) chain: like "
                    + "LoopKit's step list it is described before it runs, and each step is two cross-thread "
                    + "hand-offs (A → B to run it, B → A with its result), as in LoopKit. The flatMap peer does "
                    + "what LoopKit's engine does at run time (A queues the step on B with execute, B fulfils an "
                    + "A promise); flatMap { B.submit { … }.hop(to: A) } was not used: hop registers its "
                    + "callback on B's future from A, a third hand-off per step LoopKit does not make."),
            Row(scenario: "step sequence, building, per step", unit: .nanoseconds,
                loopKit: buildFigure(builds.loopKit) ?? Figure(median: .nan, samples: []),
                peers: buildPeers,
                goal: .none,
                note: "Building before start(): StepSequence .then × \(n) plus finally, on the main thread; NIO "
                    + "chains built inside A.submit (hop chain: until B has registered its callbacks). Not part "
                    + "of the per-step figure above."),
        ]
    }
}

extension StepSequenceChain {
    /// LoopKit: `n` trivial steps on `target`, flowing on `control`, and a `finally` that checks the result
    /// and signals `finish`; built, not started.
    static func buildLoopKit(_ control: LoopKit.EventLoop, _ target: LoopKit.EventLoop, _ n: Int,
                             _ finish: Finish) -> StepSequence<Int> {
        var sequence = StepSequence(on: control, target: target).then { (_: Void) -> Int in 1 }
        for _ in 1..<n {
            sequence = sequence.then { $0 &+ 1 }
        }
        return sequence.finally { outcome in
            if case .succeeded(let value) = outcome {
                check(value == n, "LoopKit sequence ended with \(value), expected \(n)")
            } else {
                check(false, "LoopKit sequence did not succeed: \(outcome)")
            }
            finish.signal()
        }
    }

    /// SwiftNIO: built on A, `n` times `.hop(to: B).map { $0 &+ 1 }.hop(to: A)` on an unfulfilled promise
    /// of A, whose last future signals `finish`; returns once B has registered its callbacks.
    static func buildHopChain(_ loopA: any NIOCore.EventLoop, _ loopB: any NIOCore.EventLoop, _ n: Int,
                              _ finish: Finish) throws -> EventLoopPromise<Int> {
        // Each `hop(to: B)` registers on an A future inline; each `map`/`hop(to: A)` on a B future is
        // registered by a job sent to B, so B is drained before returning.
        let promise = try loopA.submit { () -> EventLoopPromise<Int> in
            let promise = loopA.makePromise(of: Int.self)
            var future = promise.futureResult
            for _ in 0..<n {
                future = future.hop(to: loopB).map { $0 &+ 1 }.hop(to: loopA)
            }
            future.whenComplete { result in
                check((try? result.get()) == n, "NIO hop chain ended with \(result), expected \(n)")
                finish.signal()
            }
            return promise
        }.wait()
        try loopB.submit {}.wait()
        return promise
    }

    /// SwiftNIO: built on A, `n` `flatMap`s whose closure, at run time, queues the step on B and returns
    /// an A promise B fulfils; the last future signals `finish`.
    static func buildFlatMapChain(_ loopA: any NIOCore.EventLoop, _ loopB: any NIOCore.EventLoop, _ n: Int,
                                  _ finish: Finish) throws -> EventLoopPromise<Int> {
        try loopA.submit { () -> EventLoopPromise<Int> in
            let promise = loopA.makePromise(of: Int.self)
            var future = promise.futureResult
            for _ in 0..<n {
                future = future.flatMap { value in
                    let result = loopA.makePromise(of: Int.self)
                    loopB.execute { result.succeed(value &+ 1) }
                    return result.futureResult
                }
            }
            future.whenComplete { result in
                check((try? result.get()) == n, "NIO flatMap chain ended with \(result), expected \(n)")
                finish.signal()
            }
            return promise
        }.wait()
    }
}

/// Build costs per step, appended by the timed bodies (the harness runs them one at a time).
private final class BuildSamples {
    var loopKit: [Double] = []
    var hop: [Double] = []
    var flatMap: [Double] = []
}
