import HTTPTypes
import LoopKit
import LoopKitHTTP
import LoopKitHTTPTesting
import LoopKitTesting
import Testing

/// `HTTPTestClient` on the loops the routes' state lives on: a group's (in memory on its real loops, or
/// live), a shared driver's, and its own driver while a handler awaits another thread.
@Suite("HTTPTestClient on production's loops")
struct HTTPTestClientLoopsTests {
    actor Counter {
        var count = 0
        func increment() -> Int { count += 1; return count }
    }

    /// `/count`: an actor hop; `/bound`: a `LoopBound` read directly (traps off its loop); `/loop`: the index
    /// of the loop that served.
    static func router(group: LoopGroup?, counter: Counter, bound: LoopBound<Int>) -> HTTPRouter {
        var router = HTTPRouter()
        router.get("/count", .inTask) { _ in .text("\(await counter.increment())") }
        router.get("/bound") { _ in
            bound.value += 1
            return .text("\(bound.value)")
        }
        router.get("/other-loop", .inTask) { _ in
            .text("\(try await bound.perform { value -> Int in value += 1; return value })")
        }
        router.get("/loop") { request in
            .text("\(group?.loops.firstIndex { $0 === request.loop } ?? -1)")
        }
        return router
    }

    @Test func inMemoryClientsOfAGroupTakeItsLoopsInTurn() throws {
        let group = try LoopGroup(threads: 2)
        defer { group.shutdown() }
        let router = Self.router(group: group, counter: Counter(), bound: LoopBound(0, on: group.loops[0]))
        let clients = try (0..<4).map { _ in try HTTPTestClient(router: router, group: group) }
        defer { clients.forEach { $0.shutDown() } }
        #expect(try clients.map { try $0.execute(.get, "/loop").text } == ["0", "1", "0", "1"])
    }

    @Test(arguments: HTTPTestMode.allCases)
    func aGroupsClientReachesStateBoundToTheGroupsLoop(mode: HTTPTestMode) throws {
        let group = try LoopGroup(threads: 1)
        defer { group.shutdown() }
        let bound = LoopBound(0, on: group.loops[0])
        let client = try HTTPTestClient(router: Self.router(group: group, counter: Counter(), bound: bound), mode: mode, group: group)
        defer { client.shutDown() }
        #expect(try client.execute(.get, "/bound").text == "1")
        #expect(try client.execute(.get, "/bound").text == "2")
        #expect(try client.execute(.get, "/loop").text == "0")
    }

    @Test func aDriversClientReachesStateBoundToTheDriversLoop() throws {
        let driver = try LoopDriver()
        let bound = LoopBound(0, on: driver.loop)
        let router = Self.router(group: nil, counter: Counter(), bound: bound)
        let first = try HTTPTestClient(router: router, driver: driver)
        let second = try HTTPTestClient(router: router, driver: driver)
        #expect(try first.execute(.get, "/bound").text == "1")
        #expect(try second.execute(.get, "/bound").text == "2")
        #expect(first.driver === driver)
    }

    /// The default in-memory client, a handler that awaits an actor: its answer comes back from another
    /// thread, and the client waits for it rather than calling the loop idle (issue 31: 3 of 7 such tests
    /// failed at random).
    @Test func anInMemoryHandlerAwaitingAnActorIsAnswered() throws {
        let client = try HTTPTestClient(router: Self.router(group: nil, counter: Counter(), bound: LoopBound(0, on: try LoopDriver().loop)))
        for expected in 1...20 { #expect(try client.execute(.get, "/count").text == "\(expected)") }
    }

    @Test func anInMemoryHandlerAwaitingAnotherRunningLoopIsAnswered() throws {
        let group = try LoopGroup(threads: 1)
        defer { group.shutdown() }
        let client = try HTTPTestClient(router: Self.router(group: nil, counter: Counter(), bound: LoopBound(0, on: group.loops[0])))
        defer { client.shutDown() }
        for expected in 1...20 { #expect(try client.execute(.get, "/other-loop").text == "\(expected)") }
    }
}
