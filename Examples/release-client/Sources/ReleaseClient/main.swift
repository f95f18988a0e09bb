#if canImport(Glibc)
import Glibc
#endif
import LoopKit
import Synchronization

// What a user's release build must see: thread checks inlined into async code answer for the thread the
// code runs on now, never the thread a task ran on before an `await`. Exits 1 when any check fails.

let failures = Atomic<Int>(0)

func expect(_ seen: [Bool], _ expected: [Bool], _ rule: String) {
    let ok = seen == expected
    print((ok ? "ok    " : "FAIL  ") + rule + (ok ? "" : ": saw \(seen), expected \(expected)"))
    if !ok { failures.add(1, ordering: .relaxed) }
}

let group = try LoopGroup(threads: 1)
let loop = group.loops[0]
let model = try loop.invokeAndWait { LoopBound(Model(), on: loop) }
let renderer = Renderer(loop: loop, model: model)

expect(await Checks.pinnedActorAfterAnOffLoopCheck(loop, renderer), [false, true, true],
       "a pinned actor is on its loop, though its caller checked off the loop before the await")
expect(await Checks.backFromThePinnedActor(loop, renderer), [true, false],
       "back from a pinned actor, a task on the global executor is not on the loop")
expect(await Checks.pinnedActorAroundAnAwayTrip(renderer), [true, false, true, true],
       "a pinned actor's method is on the loop before and after a nonisolated await, not during it")
expect(await Checks.executorPreference(loop), [true, false, true],
       "a task preferring the loop is on it, off it under another preference, and on it again after")
expect(try await Checks.performAcrossAwaits(loop, model), [false, true, true, false],
       "perform runs its work on the loop and resumes the task off it")
expect(try await Checks.invokeAcrossAwaits(loop), [true, true, false, true],
       "invoke runs inline on the loop and queues from a task that has left it")
expect([try Checks.assumeIsolatedOnTheLoop(loop, renderer)], [true],
       "assumeIsolated holds for a pinned actor inside the loop's work")

group.shutdown()
let failed = failures.load(ordering: .relaxed)
print(failed == 0 ? "==> release client: every check passed" : "==> release client: \(failed) check(s) failed")
exit(failed == 0 ? 0 : 1)
