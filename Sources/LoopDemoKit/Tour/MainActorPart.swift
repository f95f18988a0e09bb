import LoopKit
import Synchronization

/// A `@MainActor` view model fed by background loops: on LoopKit's main loop, `@MainActor` jobs run inside
/// the loop (rule R12) and the loop's own timer reads the model directly, as a UI run loop would.
public struct MainActorPart: TourPart {
    public let id = "main-actor"
    public let title = "Main actor"
    public let items: Int

    public init(settings: TourSettings) {
        items = settings.items
    }

    public var blurb: String {
        "two background loops process \(grouped(items)) items and hand their progress to a @MainActor view model; "
            + "on the main loop those updates run inside the loop (R12), and its render timer reads the model directly."
    }

    /// What the screen shows, owned by the main actor.
    @MainActor final class ViewModel {
        var processed = 0
        var updates = 0
        var updatesOffTheLoop = 0
        var renders = 0
        var finishedWorkers = 0
    }

    public func run(_ context: PartContext) throws -> PartOutcome {
        let loop = context.loop
        let out = context.output
        let id = self.id
        guard loop.isMain else {
            out.line("  (skipped: this part needs the main loop, which `LoopDemo` runs)", part: id, event: "skipped")
            return .completed
        }
        let model = MainActor.assumeIsolated { ViewModel() }
        let workers = try LoopGroup(threads: 2, name: "demo-worker")
        defer { workers.shutdown() }
        let jobs = Mutex<[ProcessingJob]>([])
        let total = items
        let start = now()
        let startIteration = loop.iteration

        for (index, worker) in workers.loops.enumerated() {
            let share = total / 2 + (index == 0 ? total % 2 : 0)
            try worker.enqueue {
                let reported = Atomic<Int>(0)
                let sum = Atomic<Int>(0)
                do {
                    let job = try worker.process(0..<share, each: { sum.add($0 & 1, ordering: .relaxed) }, update: { done, _ in
                        // On the worker's loop: hand the progress to the main actor, once per worker iteration.
                        let delta = done - reported.exchange(done, ordering: .relaxed)
                        Task { @MainActor in
                            model.processed += delta
                            model.updates += 1
                            if EventLoop.current !== loop { model.updatesOffTheLoop += 1 }
                        }
                    }, completion: { _ in
                        Task { @MainActor in
                            model.finishedWorkers += 1
                            if model.finishedWorkers == 2 { loop.stop() }
                        }
                    })
                    jobs.withLock { $0.append(job) }
                } catch {
                    Task { @MainActor in
                        model.finishedWorkers += 1
                        if model.finishedWorkers == 2 { loop.stop() }
                    }
                }
            }
        }
        context.onCancel {
            for job in jobs.withLock({ $0 }) { job.cancel() }
        }
        // The render timer: a callback of the main loop, on the main thread, so it reads the model in place.
        let render = try loop.schedule(after: .milliseconds(30), repeating: .milliseconds(30)) {
            MainActor.assumeIsolated {
                model.renders += 1
                out.setLive("model", "  view model: \(grouped(model.processed)) of \(grouped(total)) items · "
                            + "\(grouped(model.updates)) @MainActor updates")
            }
        }
        defer { render.cancel() }
        try loop.run()
        let elapsed = now() - start
        return MainActor.assumeIsolated {
            out.clearLive()
            out.line("  \(grouped(model.processed)) of \(grouped(total)) items in \(formatNanoseconds(elapsed)): "
                     + "\(grouped(model.updates)) @MainActor updates ran inside the main loop "
                     + "(\(model.updatesOffTheLoop == 0 ? "all on its thread" : "\(model.updatesOffTheLoop) elsewhere")), "
                     + "over \(grouped(loop.iteration - startIteration)) iterations; the render timer read the model "
                     + "directly \(model.renders == 1 ? "once" : "\(grouped(model.renders)) times")",
                     part: id, event: "result",
                     fields: [("processed", .number(model.processed)), ("total", .number(total)),
                              ("updates", .number(model.updates)), ("updatesOffTheLoop", .number(model.updatesOffTheLoop)),
                              ("renders", .number(model.renders))])
            return model.processed == total && model.finishedWorkers == 2 ? .completed : .cancelled
        }
    }
}
