import HTTPTypes
import LoopDemoKit
import LoopKitHTTPTesting
import Testing
@testable import LoopKitHTTP

/// `LoopDemo serve`'s live page and its jobs, through the test client (in memory and live).
@Suite("The live page and its jobs")
struct LivePageTests {
    static func router() -> HTTPRouter { DemoRoutes.router(work: SyntheticWork(rounds: 1)) }

    @Test(arguments: HTTPTestMode.allCases)
    func thePageIsOneSelfContainedHTMLFile(mode: HTTPTestMode) throws {
        let page = try HTTPTestClient(router: Self.router(), mode: mode).execute(.get, "/")
        #expect(page.status == .ok)
        #expect(page.headerFields[.contentType] == "text/html; charset=utf-8")
        for part in ["<!doctype html>", "new EventSource(\"/jobs/\"", "fetch(\"/hello\"", "/cancel"] {
            #expect(page.text.contains(part), "the page lacks \(part)")
        }
        // Nothing from elsewhere: no external script, style sheet, image or font.
        for external in ["src=\"http", "href=\"http", "url(http", "//cdn", "@import"] {
            #expect(!page.text.contains(external), "the page loads \(external)")
        }
    }

    @Test(arguments: HTTPTestMode.allCases)
    func aJobStartsAndItsEventsEndWithItsFinalState(mode: HTTPTestMode) throws {
        let client = try HTTPTestClient(router: Self.router(), mode: mode)
        let started = try client.execute(.post, "/jobs?items=5000")
        #expect(started.status == .created)
        #expect(started.text == #"{"id":1,"items":5000}"#)
        let events = try client.execute(.get, "/jobs/1/events")
        #expect(events.headerFields[.contentType] == "text/event-stream")
        let parsed = ServerSentEventsTests.events(in: events.text)
        #expect(parsed.last?.kind == "finished")
        #expect(parsed.last?.completed == 5000)
        #expect(parsed.map(\.completed) == parsed.map(\.completed).sorted())
    }

    /// Live: the job runs on real time, a 1 ms slice per iteration, long enough to be cancelled midway.
    @Test func aCancelledJobEndsItsEventsWithACancelledEvent() throws {
        let jobs = DemoJobs()
        let watcher = try HTTPTestClient(router: DemoRoutes.router(work: SyntheticWork(rounds: 200), jobs: jobs), mode: .live)
        #expect(try watcher.execute(.post, "/jobs?items=100000000").status == .created)
        try watcher.send("GET /jobs/1/events HTTP/1.1\r\nHost: t\r\n\r\n")
        while !watcher.receivedText.contains("event: progress") { try #require(try watcher.step()) }
        let job = try #require(jobs.job(1))
        #expect(!job.isFinished)
        job.cancel()
        let events = ServerSentEventsTests.events(in: try watcher.nextResponse().text)
        #expect(events.last?.kind == "cancelled")
        #expect((events.last?.completed ?? 0) < 100_000_000)
    }

    @Test func theCancelRouteCancelsTheJob() throws {
        let jobs = DemoJobs()
        let client = try HTTPTestClient(router: DemoRoutes.router(work: SyntheticWork(rounds: 1), jobs: jobs))
        #expect(try client.execute(.post, "/jobs?items=1000000").status == .created)
        #expect(try client.execute(.post, "/jobs/1/cancel").status == .accepted)
        #expect(jobs.job(1)?.isCancelled == true || jobs.job(1)?.isFinished == true)
    }

    @Test(arguments: HTTPTestMode.allCases)
    func unknownJobsAndBadCountsAreRefused(mode: HTTPTestMode) throws {
        let client = try HTTPTestClient(router: Self.router(), mode: mode)
        #expect(try client.execute(.get, "/jobs/99/events").status == .notFound)
        #expect(try client.execute(.post, "/jobs/99/cancel").status == .notFound)
        #expect(try client.execute(.post, "/jobs?items=-1").status == .badRequest)
        #expect(try client.execute(.post, "/jobs").status == .badRequest)
    }
}
