import Testing

/// `LoopKitExecutors.install()`: Swift's main executor on the main loop and, on request, its default
/// executor on a `LoopGroup`. Each test runs `ExecutorsProbe`, an `async` main that installs them.
@Suite("LoopKit executors")
struct LoopKitExecutorsTests {
    static let mainChecks = [
        "ok installed",
        "ok the async main goes on inside the main loop",
        "ok a @MainActor task made between two enqueues runs between them, in their iteration",
        "ok the async main's continuation after a yield runs in the next iteration",
        "ok MainActor.run from another task runs in the main loop",
        "ok DispatchQueue.main blocks still run in the main loop (R12)",
        "ok Task.sleep on the main actor resumes on the main loop",
        "ok a sleep on the main loop's clock ends with a timer of the main loop",
    ]

    @Test("Installed, the main loop is the main actor's executor and runs an async main")
    func mainLoopRunsTheAsyncMain() throws {
        #expect(try probe("ExecutorsProbe", "main") == Self.mainChecks + ["==> every check passed"])
    }

    @Test("Installed with a group, tasks with no other executor run on the group's loops, spread over all of them")
    func groupIsTheDefaultExecutor() throws {
        #expect(try probe("ExecutorsProbe", "group") == Self.mainChecks + [
            "ok a task with no other executor (Task.detached) runs on a loop of the installed group",
            "ok 1,000 child tasks all ran on the group's loops (1000)",
            "ok while one loop is busy in a child, the other loop takes the waiting children ([0, 1])",
            "==> every check passed",
        ])
    }

    @Test("On a one-loop default executor, a task group's children cost no extra iterations, and a sleep goes on in its timer's iteration")
    func defaultExecutorSwitchesWithoutRequeueing() throws {
        #expect(try probe("ExecutorsProbe", "fan-out") == Self.mainChecks + [
            "ok a 100-child task group on a one-loop default executor takes at most half an iteration per child",
            "ok a task on the default executor goes on in the iteration whose timer woke it",
            "==> every check passed",
        ])
    }
}
