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

    /// Live, with work slow enough that the job is still running when the cancel arrives (in memory, on
    /// virtual time, a job runs to its end in its first iteration).
    @Test func theCancelRouteCancelsTheJob() throws {
        let jobs = DemoJobs()
        let client = try HTTPTestClient(router: DemoRoutes.router(work: SyntheticWork(rounds: 200), jobs: jobs), mode: .live)
        #expect(try client.execute(.post, "/jobs?items=100000000").status == .created)
        let cancelled = try client.execute(.post, "/jobs/1/cancel")
        #expect(cancelled.status == .accepted)
        #expect(cancelled.text == "cancelled\n")
        #expect(jobs.job(1)?.isCancelled == true)
    }

    /// A job that has ended cannot be cancelled: 409, saying so and how it ended.
    @Test(arguments: HTTPTestMode.allCases)
    func cancellingAFinishedJobIsAConflictThatNamesItsFinalState(mode: HTTPTestMode) throws {
        let client = try HTTPTestClient(router: Self.router(), mode: mode)
        #expect(try client.execute(.post, "/jobs?items=5000").status == .created)
        #expect(ServerSentEventsTests.events(in: try client.execute(.get, "/jobs/1/events").text).last?.kind == "finished")
        let answer = try client.execute(.post, "/jobs/1/cancel")
        #expect(answer.status == .conflict)
        #expect(answer.text.hasPrefix("job 1 has already finished: finished (100%"), "\(answer.text)")
        #expect(answer.text.contains("5,000 of 5,000 items"))
    }

    /// The same, for a job that ended cancelled: a second cancel is refused and names that end.
    @Test func cancellingACancelledJobAgainIsAConflictThatSaysItWasCancelled() throws {
        let jobs = DemoJobs()
        let client = try HTTPTestClient(router: DemoRoutes.router(work: SyntheticWork(rounds: 200), jobs: jobs), mode: .live)
        #expect(try client.execute(.post, "/jobs?items=100000000").status == .created)
        #expect(try client.execute(.post, "/jobs/1/cancel").status == .accepted)
        #expect(ServerSentEventsTests.events(in: try client.execute(.get, "/jobs/1/events").text).last?.kind == "cancelled")
        let again = try client.execute(.post, "/jobs/1/cancel")
        #expect(again.status == .conflict)
        #expect(again.text.hasPrefix("job 1 has already finished: cancelled (cancelled — "), "\(again.text)")
    }

    /// An `EventSource` that does not call `close()` reconnects after the stream ends, sending the final
    /// event's id: it is told 204, which stops it, instead of the final event once more.
    @Test(arguments: HTTPTestMode.allCases)
    func aFinishedJobsStreamAnswersAReconnectThatSawTheEndWithNoContent(mode: HTTPTestMode) throws {
        let client = try HTTPTestClient(router: Self.router(), mode: mode)
        #expect(try client.execute(.post, "/jobs?items=5000").status == .created)
        let final = try #require(ServerSentEventsTests.events(in: try client.execute(.get, "/jobs/1/events").text).last)
        #expect(final.kind == "finished")
        let reconnect = try client.execute(.get, "/jobs/1/events", headerFields: [.lastEventID: final.id])
        #expect(reconnect.status == .noContent)
    }

    /// A job's event ids go on from one connection to the next, here on another server's loop (one job
    /// table): live, with work slow enough that the job runs throughout.
    @Test func aJobsEventIDsGoOnAcrossConnections() throws {
        let jobs = DemoJobs()
        let router = DemoRoutes.router(work: SyntheticWork(rounds: 200), jobs: jobs)
        let first = try HTTPTestClient(router: router, mode: .live)
        #expect(try first.execute(.post, "/jobs?items=100000000").status == .created)
        defer { jobs.job(1)?.cancel() }
        try first.send("GET /jobs/1/events HTTP/1.1\r\nHost: t\r\n\r\n")
        while Self.completeEvents(in: first.receivedText).count < 2 { try #require(try first.step()) }
        let seen = try #require(Self.completeEvents(in: first.receivedText).last)
        try first.close()
        let second = try HTTPTestClient(router: router, mode: .live)
        try second.send("GET /jobs/1/events HTTP/1.1\r\nHost: t\r\n\r\n")
        while Self.completeEvents(in: second.receivedText).isEmpty { try #require(try second.step()) }
        let next = try #require(Self.completeEvents(in: second.receivedText).first)
        #expect(try #require(Int(next.id)) >= #require(Int(seen.id)))
        #expect(next.completed >= seen.completed)
    }

    /// The events of a stream's bytes so far, up to the last blank line (an event still arriving is left out).
    static func completeEvents(in text: String) -> [(kind: String, id: String, completed: Int)] {
        guard let end = text.range(of: "\n\n", options: .backwards) else { return [] }
        return ServerSentEventsTests.events(in: String(text[..<end.upperBound]))
    }

    @Test(arguments: HTTPTestMode.allCases)
    func thePageDeclaresItsIconSoBrowsersDoNotAskForFaviconICO(mode: HTTPTestMode) throws {
        let page = try HTTPTestClient(router: Self.router(), mode: mode).execute(.get, "/")
        #expect(page.text.contains(#"<link rel="icon" href="data:,">"#))
    }

    /// A browser that asks anyway (an old one, a bookmark) gets 204, not a 404 in its console.
    @Test(arguments: HTTPTestMode.allCases)
    func faviconICOIsAnsweredNoContent(mode: HTTPTestMode) throws {
        let icon = try HTTPTestClient(router: Self.router(), mode: mode).execute(.get, "/favicon.ico")
        #expect(icon.status == .noContent)
        #expect(icon.body.isEmpty)
    }

    /// The "Items per job" field shows the items the page's own jobs run: `?items=` when the page was
    /// opened with a valid count, 3,000,000 otherwise.
    @Test(arguments: HTTPTestMode.allCases)
    func theItemsFieldShowsTheCountThePageWasOpenedWith(mode: HTTPTestMode) throws {
        let client = try HTTPTestClient(router: Self.router(), mode: mode)
        func field(_ target: String) throws -> String? {
            let page = try client.execute(.get, target).text
            let input = try #require(page.range(of: #"<input id="items""#).map { page[$0.lowerBound...].prefix { $0 != ">" } })
            return input.range(of: #"value=""#).map { String(input[$0.upperBound...].prefix { $0 != "\"" }) }
        }
        #expect(try field("/?start=2&items=4000000") == "4000000")
        #expect(try field("/?items=250") == "250")
        #expect(try field("/") == "3000000")
        for bad in ["0", "-5", "100000001", "4e6", "%22%3E%3Cscript%3E", ""] {
            #expect(try field("/?items=\(bad)") == "3000000", "items=\(bad)")
        }
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
