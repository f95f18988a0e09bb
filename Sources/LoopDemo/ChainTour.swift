import LoopKit
import Synchronization

/// The first tour: a long chain of next-iteration work, a spinner on a timer, and a second thread
/// invoking onto the loop, all on one loop that stays responsive.
struct ChainTour {
    let terminal: Terminal
    let links: Int

    /// Counters the loop and the other thread share.
    final class Stats: Sendable {
        let linksDone = Atomic<Int>(0)
        let remoteInvokes = Atomic<Int>(0)
        let spinnerFrames = Atomic<Int>(0)
        let longestFrameGap = Atomic<UInt64>(0)
        let lastFrame = Atomic<UInt64>(0)
    }

    func run() throws {
        let loop = try EventLoop()
        let clock = SystemLoopClock()
        let stats = Stats()
        let start = clock.nanoseconds()
        terminal.say(terminal.bold("LoopKit \(version) on libevent \(EventLoop.libeventVersion) (\(loop.backend))"))
        terminal.say("A chain of \(grouped(links)) jobs, each queuing the next for the next iteration,")
        terminal.say("while a 50 ms timer animates a spinner and another thread invokes onto the loop.")

        // The chain: one link per iteration (R3); the loop polls I/O between every two (R4).
        let links = self.links
        @Sendable func link(_ n: Int) {
            stats.linksDone.store(n, ordering: .relaxed)
            if n < links {
                try? loop.enqueue { link(n + 1) }
            } else {
                loop.stop()
            }
        }
        try loop.enqueue { link(1) }

        // The spinner: a repeating timer. Its frames keep coming while the chain runs.
        let frames = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"]
        let terminal = self.terminal
        stats.lastFrame.store(start, ordering: .relaxed)
        let spinner = try loop.schedule(after: .milliseconds(50), repeating: .milliseconds(50)) {
            let now = clock.nanoseconds()
            let gap = now - stats.lastFrame.exchange(now, ordering: .relaxed)
            stats.longestFrameGap.max(gap, ordering: .relaxed)
            let frame = stats.spinnerFrames.add(1, ordering: .relaxed).newValue
            let done = stats.linksDone.load(ordering: .relaxed)
            let line = "\(frames[frame % frames.count]) chain \(grouped(done))/\(grouped(links))  "
                + "iteration \(grouped(loop.iteration))  remote invokes \(stats.remoteInvokes.load(ordering: .relaxed))"
            if terminal.isInteractive {
                terminal.redraw(line)
            } else if frame % 5 == 0 {
                terminal.say(line)
            }
        }

        // Another thread hands work to the loop with invoke (queued, since it is not the loop's thread).
        let remote = try LoopGroup(threads: 1, name: "demo-remote")
        @Sendable func remoteTick() {
            guard loop.isAcceptingWork, stats.linksDone.load(ordering: .relaxed) < links else { return }
            try? loop.invoke { stats.remoteInvokes.add(1, ordering: .relaxed) }
            _ = try? remote.next().schedule(after: .milliseconds(20), remoteTick)
        }
        try remote.next().enqueue(remoteTick)

        try loop.run()
        spinner.cancel()
        remote.shutdown()
        try loop.runOnce(blocking: false)  // the last remote invokes
        let elapsed = clock.nanoseconds() - start
        let iterations = loop.iteration
        terminal.say("")
        terminal.say(terminal.bold("Done.") + " \(grouped(links)) links in \(formatNanoseconds(elapsed)).")
        terminal.say("  iterations:            \(grouped(iterations)) (\(grouped(elapsed / max(iterations, 1))) ns each, I/O polled in every one)")
        terminal.say("  spinner frames:        \(stats.spinnerFrames.load(ordering: .relaxed)), longest gap \(formatNanoseconds(stats.longestFrameGap.load(ordering: .relaxed))) (timer period 50 ms)")
        terminal.say("  remote invokes:        \(stats.remoteInvokes.load(ordering: .relaxed)), cross-thread wake-ups \(loop.wakeUpCount)")
        loop.shutdown()
    }

    var version: String { "0.1.0" }
}
