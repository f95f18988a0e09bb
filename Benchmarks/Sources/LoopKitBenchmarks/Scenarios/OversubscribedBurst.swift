import Foundation
import Synchronization
import LoopKit
import NIOCore
import NIOPosix

/// The tour's cross-thread burst on an oversubscribed machine.
///
/// Four producer threads each hand 250,000 closures to one loop (LoopKit: `invoke` from another thread,
/// which enqueues; SwiftNIO: `execute`), while one CPU hog per core spins at the same priority. LoopKit is
/// also measured without the hogs in the same run: its quiet figure, the reference for the goal.
enum OversubscribedBurst {
    static let nioPeer = "NIO execute, with hogs"
    static let quiet = "LoopKit, no hogs"
    static let nioQuiet = "NIO execute, no hogs"
    static let producers = 4

    static func run(_ options: Options, nio: MultiThreadedEventLoopGroup) throws -> [Row] {
        let perProducer = options.count(250_000, quick: 50_000)
        let total = producers * perProducer
        let hogs = ProcessInfo.processInfo.activeProcessorCount

        let group = try LoopGroup(threads: 1, name: "bench-oversub")
        let loop = group.next()
        let eventLoop = nio.next()

        func loopKitBurst() -> UInt64 {
            let finish = Finish()
            try! loop.invokeAndWait {
                burstCounter = 0
                burstTarget = total
                burstFinish = finish
            }
            let start = monotonicNanoseconds()
            let done = (0..<producers).map { _ in
                spawnThread {
                    for _ in 0..<perProducer { try! loop.invoke(loopKitBurstItem) }
                }
            }
            let end = finish.wait()
            done.forEach { $0.wait() }
            return end - start
        }
        func nioBurst() -> UInt64 {
            let finish = Finish()
            try! eventLoop.submit {
                burstCounter = 0
                burstTarget = total
                burstFinish = finish
            }.wait()
            let start = monotonicNanoseconds()
            let done = (0..<producers).map { _ in
                spawnThread {
                    for _ in 0..<perProducer { eventLoop.execute(nioBurstItem) }
                }
            }
            let end = finish.wait()
            done.forEach { $0.wait() }
            return end - start
        }

        var comparison = Comparison(options)
        // Added LoopKit, peer, LoopKit, peer: the runs alternate.
        comparison.loopKit("LoopKit", operations: total) { withHogs(hogs) { loopKitBurst() } }
        comparison.peer(nioPeer, operations: total) { withHogs(hogs) { nioBurst() } }
        comparison.loopKit(quiet, operations: total) { loopKitBurst() }
        comparison.peer(nioQuiet, operations: total) { nioBurst() }
        let figures = try comparison.run()
        let wakeUps = loop.wakeUpCount
        let iterations = loop.iteration
        group.shutdown()
        return [
            Row(scenario: "oversubscribed burst, 4 × \(perProducer / 1000)k invokes", unit: .nanoseconds,
                loopKit: figures["LoopKit"], peers: figures.peers(nioPeer, quiet, nioQuiet),
                goal: .withinTimesOf(reference: quiet, times: 3, andNoSlowerThan: nioPeer),
                note: "\(producers) producer threads × \(perProducer) closures onto one loop while \(hogs) busy-looping "
                    + "threads (one per core) run beside them; timed from the producers' start until the last closure "
                    + "ran. Over all LoopKit runs: \(iterations) iterations, \(wakeUps) cross-thread wake-ups."),
        ]
    }

    /// Runs `body` while `count` threads spin; they start before it and stop after.
    private static func withHogs(_ count: Int, _ body: () -> UInt64) -> UInt64 {
        let stop = Atomic<Bool>(false)
        let hogs = (0..<count).map { _ in
            spawnThread {
                var x: UInt64 = 1
                while !stop.load(ordering: .relaxed) {
                    for _ in 0..<1000 { x = x &* 6364136223846793005 &+ 1 }
                }
                if x == 0 { print("") }
            }
        }
        usleep(20_000)  // let the hogs take the cores
        let elapsed = body()
        stop.store(true, ordering: .relaxed)
        hogs.forEach { $0.wait() }
        return elapsed
    }
}

/// The burst's counter, target and finish, set on the consuming loop's thread before each burst and
/// touched only there during it (the producers only enqueue the global functions below).
nonisolated(unsafe) private var burstCounter = 0
nonisolated(unsafe) private var burstTarget = 0
nonisolated(unsafe) private var burstFinish: Finish?

@Sendable private func loopKitBurstItem() {
    burstCounter &+= 1
    if burstCounter == burstTarget { burstFinish!.signal() }
}

@Sendable private func nioBurstItem() {
    burstCounter &+= 1
    if burstCounter == burstTarget { burstFinish!.signal() }
}
