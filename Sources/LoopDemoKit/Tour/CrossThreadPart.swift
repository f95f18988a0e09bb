import LoopKit

/// Background threads invoke onto the loop as fast as they can; the loop counts what arrives, checks each
/// thread's order, and shows how few wake-ups the burst cost.
public struct CrossThreadPart: TourPart {
    public let id = "cross-thread"
    public let title = "Cross-thread"
    public let producers: Int
    public let invokesPerProducer: Int

    public init(settings: TourSettings) {
        producers = settings.producers
        invokesPerProducer = settings.invokesPerProducer
    }

    public var blurb: String {
        "\(producers) background threads each invoke \(grouped(invokesPerProducer)) closures onto this loop; "
            + "a burst costs at most one wake-up per iteration (R7), and each thread's order is kept (R1)."
    }

    /// What the loop has received; lives on the loop.
    struct Received {
        var count = 0
        var lastSequence: [Int]
        var outOfOrder = 0
        var producersDone = 0
    }

    public func run(_ context: PartContext) throws -> PartOutcome {
        let loop = context.loop
        let out = context.output
        let id = self.id
        let producers = self.producers
        let perProducer = self.invokesPerProducer
        let total = producers * perProducer
        let received = LoopBound(Received(lastSequence: Array(repeating: -1, count: producers)), on: loop)
        let threads = try LoopGroup(threads: producers, name: "demo-producer")
        defer { threads.shutdown() }

        let startWakeUps = loop.wakeUpCount
        let startIteration = loop.iteration
        let start = now()
        for producer in 0..<producers {
            try threads.loops[producer].enqueue {
                // On a background thread: invoke queues onto the loop (it runs inline only on the loop's thread).
                var sent = 0
                while sent < perProducer, !context.isCancelled {
                    let sequence = sent
                    try? loop.invoke {
                        received.withValue { r in
                            r.count += 1
                            if sequence <= r.lastSequence[producer] { r.outOfOrder += 1 }
                            r.lastSequence[producer] = sequence
                        }
                    }
                    sent += 1
                }
                try? loop.invoke {
                    received.value.producersDone += 1
                    if received.value.producersDone == producers { loop.stop() }
                }
            }
        }
        // A live counter, redrawn from a timer.
        let ticker = try loop.schedule(after: .milliseconds(30), repeating: .milliseconds(30)) {
            let r = received.value
            let wakeUps = loop.wakeUpCount - startWakeUps
            out.setLive("counter", "  received \(grouped(r.count)) of \(grouped(total)) · wake-ups \(grouped(wakeUps)) · "
                        + "iterations \(grouped(loop.iteration - startIteration))")
        }
        defer { ticker.cancel() }
        try loop.run()
        let elapsed = now() - start
        let wakeUps = loop.wakeUpCount - startWakeUps
        let iterations = loop.iteration - startIteration
        let r = received.value
        out.line("  \(grouped(r.count)) of \(grouped(total)) invokes from \(producers) threads in \(formatNanoseconds(elapsed)) "
                 + "(\(formatRate(rate(r.count, in: elapsed)))/s)", part: id, event: "result",
                 fields: [("received", .number(r.count)), ("total", .number(total)), ("threads", .number(producers)),
                          ("nanoseconds", .number(elapsed))])
        out.line("  the loop woke \(out.bold(grouped(wakeUps))) times for them (\(grouped(r.count / max(Int(wakeUps), 1))) items per wake-up) "
                 + "over \(grouped(iterations)) iterations; order kept for every thread: \(r.outOfOrder == 0 ? "yes" : "NO (\(r.outOfOrder) out of order)")",
                 part: id, event: "result",
                 fields: [("wakeUps", .number(wakeUps)), ("iterations", .number(iterations)), ("outOfOrder", .number(r.outOfOrder))])
        return r.count == total ? .completed : .cancelled
    }
}
