import HTTPTypes
import LoopKit
import LoopKitHTTP
import LoopKitHTTPTesting
import LoopKitTesting
import Synchronization
import Testing

/// `.progressEvents(job.progress, cancelsWhenAbandoned: true)`: the work lives as long as its viewers.
@Suite("Progress events that own their work")
struct ProgressOwnershipTests {
    /// The job the route started, for the test to look at.
    final class JobBox: Sendable {
        let job = Mutex<ProcessingJob?>(nil)
        var current: ProcessingJob { job.withLock { $0! } }
    }

    /// `/work` starts a 200-item job, one item per iteration, the first time it is asked; every request
    /// follows that job.
    static func router(box: JobBox, owning: Bool) -> HTTPRouter {
        var router = HTTPRouter()
        router.get("/work") { request in
            let job = try box.job.withLock { job in
                if let job { return job }
                let started = try request.loop.process(Array(0..<200), budget: .perItem, eachChunk: { _ in }, completion: { _ in })
                job = started
                return started
            }
            return .progressEvents(job.progress, cancelsWhenAbandoned: owning, keepAlive: nil)
        }
        return router
    }

    @Test func aJobWhoseOnlyViewerLeavesIsCancelled() throws {
        let box = JobBox()
        let client = try HTTPTestClient(router: Self.router(box: box, owning: true))
        try client.send("GET /work HTTP/1.1\r\nHost: t\r\n\r\n")
        while !client.receivedText.contains("event: progress") { try #require(try client.step()) }
        try client.close()
        #expect(box.current.isCancelled)
        #expect(box.current.isFinished)
    }

    @Test func aJobWhoseViewerStaysRunsToTheEnd() throws {
        let box = JobBox()
        let client = try HTTPTestClient(router: Self.router(box: box, owning: true))
        let response = try client.execute(.get, "/work")
        #expect(response.text.contains("event: finished"))
        #expect(!box.current.isCancelled)
    }

    @Test func aProgressIsCancelledWhenItsLastViewerLeaves() throws {
        let driver = try LoopDriver()
        let progress = TaskProgress(totalUnitCount: 10)
        var router = HTTPRouter()
        router.get("/work") { _ in .progressEvents(progress, cancelsWhenAbandoned: true, keepAlive: nil) }
        let first = try HTTPTestClient(router: router, driver: driver)
        let second = try HTTPTestClient(router: router, driver: driver)
        try first.send("GET /work HTTP/1.1\r\nHost: t\r\n\r\n")
        try second.send("GET /work HTTP/1.1\r\nHost: t\r\n\r\n")
        try driver.runUntilIdle()
        #expect(first.receivedText.contains("event: progress") && second.receivedText.contains("event: progress"))
        try first.close()
        #expect(!progress.isCancelled)
        try second.close()
        #expect(progress.isCancelled)
    }

    @Test func aStreamThatDoesNotOwnTheJobLeavesItRunning() throws {
        let box = JobBox()
        let client = try HTTPTestClient(router: Self.router(box: box, owning: false))
        try client.send("GET /work HTTP/1.1\r\nHost: t\r\n\r\n")
        while !client.receivedText.contains("event: progress") { try #require(try client.step()) }
        try client.close()
        #expect(!box.current.isCancelled)
        #expect(box.current.isFinished)  // closeClient ran the loop until idle: the job ran to its end
    }
}
