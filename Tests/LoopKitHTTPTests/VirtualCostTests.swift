import HTTPTypes
import LoopKit
import LoopKitHTTP
import LoopKitHTTPTesting
import LoopKitTesting
import Testing

/// On the virtual clock time stands still while items run, so a time-budgeted job finishes in one
/// iteration; an item that advances the driver's clock has a virtual cost, and the job runs in slices
/// as it would on a real loop (the Testing HTTP handlers article).
@Suite("Virtual cost of processed items")
struct VirtualCostTests {
    /// `/work` runs 1,000 items under the default 4 ms budget and streams its progress; `cost` is what
    /// each item does besides its work.
    static func router(cost: @escaping @Sendable () -> Void) -> HTTPRouter {
        var router = HTTPRouter()
        router.get("/work") { request in
            let job = try request.loop.process(Array(0..<1_000), each: { _ in cost() }, completion: { _ in })
            return .progressEvents(job.progress, keepAlive: nil)
        }
        return router
    }

    static func progressEvents(in text: String) -> Int {
        text.components(separatedBy: "event: progress").count - 1
    }

    @Test func withoutACostABudgetedJobEndsInOneIteration() throws {
        let client = try HTTPTestClient(router: Self.router(cost: {}))
        let response = try client.execute(.get, "/work")
        #expect(Self.progressEvents(in: response.text) <= 1)
        #expect(response.text.contains("event: finished"))
    }

    @Test func itemsThatAdvanceTheClockAreProcessedInSlices() throws {
        let driver = try LoopDriver()
        let clock = driver.clock
        let client = try HTTPTestClient(router: Self.router(cost: { clock.advance(by: .microseconds(100)) }), driver: driver)
        let response = try client.execute(.get, "/work")
        #expect(Self.progressEvents(in: response.text) >= 20)   // 35 items per 4 ms slice: 29 slices
        #expect(response.text.contains("event: finished"))
    }
}
