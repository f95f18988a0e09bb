import LoopKit

/// A view model, not `Sendable`: it lives on the loop, reached through a `LoopBound`.
final class Model {
    var count = 0
}

/// The README's pattern: an actor pinned to a loop, reading loop-bound state directly.
actor Renderer {
    let loop: EventLoop
    let model: LoopBound<Model>

    init(loop: EventLoop, model: LoopBound<Model>) {
        self.loop = loop
        self.model = model
    }

    nonisolated var unownedExecutor: UnownedSerialExecutor { loop.unownedExecutor }

    func bump() -> Int {
        model.value.count += 1
        return model.value.count
    }

    func isOnLoop() -> Bool { loop.isCurrent && EventLoop.current === loop }

    /// Checks the loop, leaves it for a nonisolated async function, comes back and checks again.
    func checksAroundAnAwayTrip() async -> [Bool] {
        let before = loop.isCurrent
        let away = await awayFromAnyLoop(loop)
        let after = loop.isCurrent
        return [before, away, after, model.value.count >= 0]
    }
}

/// Runs on Swift's global executor (nonisolated, async, no executor preference).
nonisolated func awayFromAnyLoop(_ loop: EventLoop) async -> Bool {
    await Task.yield()
    return loop.isCurrent
}

/// Records whether work ran on the loop's thread, from whichever thread runs it.
final class Flag: Sendable {
    private let bits = Mutex<[String: Bool]>([:])
    func set(_ key: String, _ value: Bool) { bits.withLock { $0[key] = value } }
    subscript(key: String) -> Bool? { bits.withLock { $0[key] } }
}

import Synchronization

/// Each check returns what it saw; the expectation sits beside it in `main.swift`.
enum Checks {
    /// The program: a task off the loop checks the loop, then calls into the pinned actor.
    static func pinnedActorAfterAnOffLoopCheck(_ loop: EventLoop, _ renderer: Renderer) async -> [Bool] {
        await Task.detached {
            let offLoop = loop.isCurrent
            let inside = await renderer.isOnLoop()
            let count = await renderer.bump()
            return [offLoop, inside, count > 0]
        }.value
    }

    /// The dangerous direction: back from the pinned actor on the global executor, the loop is not current.
    static func backFromThePinnedActor(_ loop: EventLoop, _ renderer: Renderer) async -> [Bool] {
        await Task.detached {
            let inside = await renderer.isOnLoop()
            return [inside, loop.isCurrent]
        }.value
    }

    static func pinnedActorAroundAnAwayTrip(_ renderer: Renderer) async -> [Bool] {
        await Task.detached { await renderer.checksAroundAnAwayTrip() }.value
    }

    /// A task that prefers the loop, then the global executor for a while, then the loop again.
    static func executorPreference(_ loop: EventLoop) async -> [Bool] {
        await Task(executorPreference: loop) {
            let first = loop.isCurrent
            let away = await withTaskExecutorPreference(globalConcurrentExecutor) { loop.isCurrent }
            let back = loop.isCurrent
            return [first, away, back]
        }.value
    }

    /// `perform` from the global executor: the work runs on the loop, the task resumes off it.
    static func performAcrossAwaits(_ loop: EventLoop, _ model: LoopBound<Model>) async throws -> [Bool] {
        try await Task.detached {
            let before = loop.isCurrent
            let inWork = try await loop.perform { loop.isCurrent }
            let count = try await model.perform { model in
                model.count += 1
                return model.count
            }
            let after = loop.isCurrent
            return [before, inWork, count > 0, after]
        }.value
    }

    /// `invoke` from a task that was on the loop and has left it: queued, never inline off the loop.
    static func invokeAcrossAwaits(_ loop: EventLoop) async throws -> [Bool] {
        let flag = Flag()
        let seen = try await Task(executorPreference: loop) {
            let first = loop.isCurrent
            try loop.invoke { flag.set("inline-on-loop", loop.isCurrent) }  // on the loop: runs now
            let ranInline = flag["inline-on-loop"] == true
            let invokedAway = try await withTaskExecutorPreference(globalConcurrentExecutor) {
                try loop.invoke { flag.set("from-away", loop.isCurrent) }  // off the loop: queued
                return loop.isCurrent
            }
            return [first, ranInline, invokedAway]
        }.value
        _ = try await loop.perform {}  // the queued invoke has run once this has
        return seen + [flag["from-away"] == true]
    }

    /// `assumeIsolated` on the loop's thread, from work the loop runs.
    static func assumeIsolatedOnTheLoop(_ loop: EventLoop, _ renderer: Renderer) throws -> Bool {
        try loop.invokeAndWait { renderer.assumeIsolated { $0.bump() } > 0 }
    }
}
