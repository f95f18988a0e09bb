import HTTPTypes
import LoopKit
import LoopKitHTTPTesting
import Testing
@testable import LoopKitHTTP

/// A test reads server-sent events as a browser's `EventSource` does: a whole buffered body
/// (`response.serverSentEvents`) or a stream still open, event by event (`client.nextEvent()`, sync and
/// async, in memory and live).
@Suite("Reading server-sent events in a test")
struct ServerSentEventReaderTests {
    /// A route that answers `raw` as a `text/event-stream` body, as it is.
    static func events(in raw: String) throws -> [ServerSentEvent] {
        var router = HTTPRouter()
        router.get("/raw") { _ in .bytes(Bytes(raw), contentType: "text/event-stream") }
        return try HTTPTestClient(router: router).execute(.get, "/raw").serverSentEvents
    }

    static func get(_ path: String) -> HTTPRequest {
        HTTPRequest(method: .get, scheme: nil, authority: nil, path: path)
    }

    // MARK: The standard's parsing rules, on a buffered body

    @Test func aBufferedBodysEventsHaveTheirTypeIDJoinedDataAndRetry() throws {
        let events = try Self.events(in: "retry: 3000\n\nid: 1\nevent: progress\ndata: a\ndata: b\n\n: a comment\ndata: c\n\n")
        #expect(events == [
            ServerSentEvent(event: "progress", id: "1", data: "a\nb", retry: .milliseconds(3000)),
            ServerSentEvent(id: "1", data: "c"),  // the last event id stays until another id line
        ])
    }

    @Test func crlfCRAndLFAllEndLinesAndALeadingByteOrderMarkIsSkipped() throws {
        let events = try Self.events(in: "\u{FEFF}data: one\r\n\r\ndata: two\r\rdata: three\n\n")
        #expect(events.map(\.data) == ["one", "two", "three"])
    }

    @Test func aFieldWithoutAColonIsEmptyAndOnlyOneSpaceAfterTheColonIsDropped() throws {
        let events = try Self.events(in: "data\n\ndata:x\n\ndata:  y\n\n")
        #expect(events.map(\.data) == ["", "x", " y"])
    }

    @Test func unknownFieldsABadRetryAndAnIDWithANULAreIgnored() throws {
        let events = try Self.events(in: "id: 5\nfoo: bar\nretry: 12a\ndata: x\n\nid: a\u{0}b\nretry: -1\ndata: y\n\n")
        #expect(events == [ServerSentEvent(id: "5", data: "x"), ServerSentEvent(id: "5", data: "y")])
    }

    @Test func anEmptyIDClearsTheLastIDAndAnEmptyTypeIsMessage() throws {
        let events = try Self.events(in: "id: 5\nevent: tick\ndata: x\n\nid\nevent:\ndata: y\n\n")
        #expect(events == [ServerSentEvent(event: "tick", id: "5", data: "x"), ServerSentEvent(data: "y")])
    }

    @Test func aBlockWithoutDataDispatchesNothingAndALastEventWithoutItsBlankLineIsDiscarded() throws {
        let events = try Self.events(in: "event: lonely\n\n:keep-alive\n\ndata: kept\n\ndata: cut off\n")
        #expect(events == [ServerSentEvent(data: "kept")])
    }

    @Test func whatTheLibrarysWriterWritesReadsBackAsTheSameEvents() throws {
        let sent = [ServerSentEvent(event: "a", id: "1", data: "x\ny", retry: .seconds(2)), ServerSentEvent(id: "2", data: "")]
        let raw = try sent.map { try $0.encoded().utf8String }.joined()
        #expect(try Self.events(in: raw) == sent)
    }

    // MARK: A stream still open

    /// Sends `first`, waits for the gate, sends `second`, ends.
    static func router(gate: Gate) -> HTTPRouter {
        var router = HTTPRouter()
        router.get("/events") { _ in
            .events(keepAlive: nil) { events in
                try await events.send(ServerSentEvent(event: "first", id: "1", data: "one"))
                await gate.wait()
                try await events.send(ServerSentEvent(event: "second", id: "2", data: "two\nlines"))
            }
        }
        router.get("/hello") { _ in .text("hello") }
        return router
    }

    @Test(arguments: HTTPTestMode.allCases)
    func nextEventReadsAnOpenStreamEventByEventThenNilAtItsEnd(mode: HTTPTestMode) throws {
        let gate = Gate()
        let client = try HTTPTestClient(router: Self.router(gate: gate), mode: mode)
        try client.send(Self.get("/events"))
        #expect(try client.nextEvent() == ServerSentEvent(event: "first", id: "1", data: "one"))
        gate.open()
        #expect(try client.nextEvent() == ServerSentEvent(event: "second", id: "2", data: "two\nlines"))
        #expect(try client.nextEvent() == nil)
        #expect(try client.execute(.get, "/hello").text == "hello")  // the connection is kept alive
    }

    @Test func inMemoryNextEventThrowsNoResponseWhileTheServerWaits() throws {
        let gate = Gate()
        let client = try HTTPTestClient(router: Self.router(gate: gate))
        try client.send(Self.get("/events"))
        _ = try client.nextEvent()
        #expect {
            _ = try client.nextEvent()
        } throws: { error in
            guard case HTTPTestClientError.noResponse = error else { return false }
            return true
        }
        gate.open()
        #expect(try client.nextEvent()?.event == "second")
    }

    @Test(arguments: HTTPTestMode.allCases)
    func theAsyncFormReadsAcrossAwaits(mode: HTTPTestMode) async throws {
        let gate = Gate()
        let client = try HTTPTestClient(router: Self.router(gate: gate), mode: mode)
        try await client.send(Self.get("/events"))
        #expect(try await client.nextEvent()?.data == "one")
        await Task.yield()
        gate.open()
        #expect(try await client.nextEvent()?.data == "two\nlines")
        #expect(try await client.nextEvent() == nil)
    }

    @Test(arguments: HTTPTestMode.allCases)
    func aResponseThatIsNoEventStreamIsThrownWhole(mode: HTTPTestMode) throws {
        let client = try HTTPTestClient(router: Self.router(gate: Gate()), mode: mode)
        try client.send(Self.get("/hello"))
        #expect {
            _ = try client.nextEvent()
        } throws: { error in
            guard case HTTPTestClientError.notAnEventStream(let response) = error else { return false }
            return response.status == .ok && response.text == "hello"
        }
    }

    @Test func theProgressOfAJobReadsAsProgressEventsThenFinished() throws {
        let progress = TaskProgress(totalUnitCount: 2)
        var router = HTTPRouter()
        router.get("/job") { _ in .progressEvents(progress, keepAlive: nil) }
        let client = try HTTPTestClient(router: router)
        try client.send(Self.get("/job"))
        #expect(try client.nextEvent()?.event == "progress")
        progress.completedUnitCount = 2
        var last: ServerSentEvent?
        while let event = try client.nextEvent() { last = event }
        #expect(last?.event == "finished")
    }
}
