import Testing

/// `EventLoop.main`: the main thread's loop, which runs Dispatch's main queue and so `@MainActor` jobs.
/// Each test runs a scenario of `MainLoopProbe` (its ordering rule, R12, is in the ordering contract suite).
@Suite("Main loop")
struct MainLoopTests {
    @Test("Inside the main loop's queued jobs and timers, MainActor.assertIsolated holds")
    func callbacksAreIsolatedToTheMainActor() throws {
        #expect(try mainLoopProbe("isolation") == [
            "1 timer: main actor isolated",
            "1 drain: main actor isolated true",
        ])
    }

    @Test("Main-queue work and @MainActor tasks from another thread wake a main loop waiting in its poll")
    func workFromAnotherThreadWakesTheMainLoop() throws {
        let lines = try mainLoopProbe("wake").map { $0.drop { $0 != " " }.dropFirst() }
        #expect(lines == [
            "main queue: from another thread",
            "main actor: from another thread",
            "main actor: back after a detached task that saw isCurrent false",
        ])
    }

    @Test("Asked for first on another thread, the main loop belongs to the main thread")
    func mainLoopBelongsToTheMainThread() throws {
        #expect(try mainLoopProbe("first-use-off-main") == [
            "0 other thread: isCurrent false, isMain true",
            "0 main thread: isCurrent true",
        ])
    }
}
