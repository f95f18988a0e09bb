import Foundation
import HTTPTypes
import LoopKit
import LoopKitHTTPTesting
import Synchronization
import Testing
@testable import LoopKitHTTP

@Suite("Server-sent events")
struct ServerSentEventsTests {
    // MARK: The wire format

    @Test func anEventIsItsFieldsThenABlankLine() throws {
        let event = ServerSentEvent(event: "tick", id: "7", data: "hello", retry: .milliseconds(2500))
        #expect(String(decoding: try event.encoded(), as: UTF8.self) == "event: tick\nid: 7\nretry: 2500\ndata: hello\n\n")
    }

    @Test func everyLineOfTheDataIsADataLineWhateverItsBreak() throws {
        let event = ServerSentEvent(data: "a\nb\r\nc\rd")
        #expect(String(decoding: try event.encoded(), as: UTF8.self) == "data: a\ndata: b\ndata: c\ndata: d\n\n")
        #expect(String(decoding: try ServerSentEvent(data: "").encoded(), as: UTF8.self) == "data: \n\n")
    }

    /// Found by Fuzz/ServerSentEventFuzzer (Corpus/ServerSentEventFuzzer/regression-retry-past-int-milliseconds):
    /// a retry over Int.max milliseconds trapped on overflow, one over Int64.max seconds in
    /// `Duration.components`. It is written in full; a negative one as 0.
    @Test func aRetryOfAnyLengthIsWrittenInWholeMilliseconds() throws {
        let long = ServerSentEvent(data: "x", retry: .seconds(Int64.max))
        #expect(String(decoding: try long.encoded(), as: UTF8.self) == "retry: 9223372036854775807000\ndata: x\n\n")
        // Past what Duration.components can return (it traps): seconds over Int64.max once attoseconds carry.
        let longest = ServerSentEvent(data: "x", retry: Duration(secondsComponent: .max, attosecondsComponent: .max))
        #expect(String(decoding: try longest.encoded(), as: UTF8.self) == "retry: 9223372036854775816223\ndata: x\n\n")
        let negative = ServerSentEvent(data: "x", retry: .milliseconds(-1500))
        #expect(String(decoding: try negative.encoded(), as: UTF8.self) == "retry: 0\ndata: x\n\n")
    }

    @Test func aFieldThatWouldInjectAnotherIsATypedError() {
        #expect(throws: ServerSentEventError.lineBreak(field: "event", value: "a\ndata: forged")) {
            try ServerSentEvent(event: "a\ndata: forged", data: "x").encoded()
        }
        #expect(throws: ServerSentEventError.lineBreak(field: "id", value: "1\0")) {
            try ServerSentEvent(id: "1\0", data: "x").encoded()
        }
        #expect(ServerSentEventError.lineBreak(field: "event", value: "a\nb").description.contains("must not contain a line break"))
    }

    @Test func aCommentIsOneLineThatClientsIgnore() {
        #expect(String(decoding: ServerSentEvent.comment("keep\nalive"), as: UTF8.self) == ": keep alive\n")
    }

    // MARK: Over a connection

    static let threeEvents = "event: greeting\ndata: one\n\nid: 2\ndata: two\n\ndata: three\ndata: lines\n\n"

    static func router(ended: Flag = Flag()) -> HTTPRouter {
        var router = HTTPRouter()
        router.get("/three") { _ in
            .events { events in
                try await events.send(ServerSentEvent(event: "greeting", data: "one"))
                try await events.send(ServerSentEvent(id: "2", data: "two"))
                try await events.send(ServerSentEvent(data: "three\nlines"))
            }
        }
        // One event, then waits for nothing (a stream that never yields) until the client goes.
        router.get("/quiet") { _ in
            .events(keepAlive: .seconds(15)) { events in
                defer { ended.set() }
                try await events.send(ServerSentEvent(data: "ready"))
                let (never, _) = AsyncStream<Int>.makeStream()
                for await _ in never {}
            }
        }
        return router
    }

    @Test(arguments: HTTPTestMode.allCases)
    func eventsAreStreamedAsTextEventStream(mode: HTTPTestMode) throws {
        let client = try HTTPTestClient(router: Self.router(), mode: mode)
        let response = try client.execute(.get, "/three")
        #expect(response.status == .ok)
        #expect(response.headerFields[.contentType] == "text/event-stream")
        #expect(response.headerFields[.cacheControl] == "no-cache")
        #expect(response.text == Self.threeEvents)
        #expect(try client.execute(.get, "/three").text == Self.threeEvents)  // the connection serves on
    }

    @Test func keepAliveCommentsGoOutOnlyWhenTheStreamIsQuiet() throws {
        let client = try HTTPTestClient(router: Self.router())
        try client.send("GET /quiet HTTP/1.1\r\nHost: t\r\n\r\n")
        try client.runUntilIdle()
        #expect(client.receivedText.hasSuffix("data: ready\n\n\r\n"))
        client.discardReceived()
        try client.advance(by: .seconds(15))  // the first tick finds the event just written: nothing
        try client.runUntilIdle()
        #expect(client.receivedText.isEmpty)
        try client.advance(by: .seconds(15))
        try client.runUntilIdle()
        #expect(client.receivedText.contains(": keep-alive\n"))
    }

    @Test(arguments: HTTPTestMode.allCases)
    func aClientThatLeavesEndsTheStreamsTask(mode: HTTPTestMode) throws {
        let ended = Flag()
        let client = try HTTPTestClient(router: Self.router(ended: ended), mode: mode)
        try client.send("GET /quiet HTTP/1.1\r\nHost: t\r\n\r\n")
        while !client.receivedText.contains("data: ready") { try #require(try client.step()) }
        #expect(!ended.isSet)
        try client.close()
        // In memory each advance runs the loop; live, the server ends the task on its own thread: a
        // bounded wait (real time passes in live mode), not an ordering.
        for _ in 0..<5_000 where !ended.isSet { try client.advance(by: .milliseconds(1)) }
        #expect(ended.isSet)
    }

    // MARK: Progress on the wire

    /// However many changes happen between two iterations, one event carries the latest state; the final
    /// state always goes out, then the stream ends.
    @Test func progressIsCoalescedToOneEventPerIterationAndEndsWithItsFinalState() throws {
        let progress = TaskProgress(totalUnitCount: 100)
        var router = HTTPRouter()
        router.get("/progress") { _ in .progressEvents(progress, keepAlive: nil) }
        let client = try HTTPTestClient(router: router)
        try client.send("GET /progress HTTP/1.1\r\nHost: t\r\n\r\n")
        try client.runUntilIdle()
        #expect(Self.events(in: client.receivedText).map(\.completed) == [0])
        for unit in 1...50 { progress.completedUnitCount = Int64(unit) }
        try client.runUntilIdle()
        #expect(Self.events(in: client.receivedText).map(\.completed) == [0, 50])
        for unit in 51...100 { progress.completedUnitCount = Int64(unit) }
        let response = try client.nextResponse()  // the stream ends after the final state
        let events = Self.events(in: response.text)
        #expect(events.map(\.completed) == [0, 50, 100])
        #expect(events.map(\.kind) == ["progress", "progress", "finished"])
        #expect(events.map(\.id) == ["1", "2", "3"])
    }

    @Test func aCancelledProgressEndsWithACancelledEvent() throws {
        let progress = TaskProgress(totalUnitCount: 10)
        var router = HTTPRouter()
        router.get("/progress") { _ in .progressEvents(progress, keepAlive: nil) }
        let client = try HTTPTestClient(router: router)
        try client.send("GET /progress HTTP/1.1\r\nHost: t\r\n\r\n")
        try client.runUntilIdle()
        progress.completedUnitCount = 3
        progress.cancel()
        let events = Self.events(in: try client.nextResponse().text)
        #expect(events.last?.kind == "cancelled")
        #expect(events.last?.completed == 3)
    }

    /// Fifty streams following one progress on one loop (one observation, each state encoded once): every
    /// one ends with the final state, under the same id, and the states each saw only move forward.
    @Test func manySubscribersShareOneProgressAndAllGetItsFinalState() async throws {
        let progress = TaskProgress(totalUnitCount: 1_000)
        var router = HTTPRouter()
        router.get("/progress") { _ in .progressEvents(progress, keepAlive: nil) }
        try await withServer(router: router) { server, port in
            let clients = Clients(try (0..<50).map { _ in try RawClient(port: port) })
            for client in clients.all { client.send("GET /progress HTTP/1.1\r\nHost: t\r\n\r\n") }
            #expect(try await eventually { try await server.openConnectionCount() == 50 })
            for unit in stride(from: 10, through: 1_000, by: 10) { progress.completedUnitCount = Int64(unit) }
            let streams = try await onOwnThread { try clients.all.map { try $0.readResponse().text } }
            let finals = streams.map { Self.events(in: $0).last }
            #expect(finals.allSatisfy { $0?.kind == "finished" && $0?.completed == 1_000 })
            #expect(Set(finals.map { $0?.id }).count == 1)  // one shared sequence of states
            for stream in streams {
                let counts = Self.events(in: stream).map(\.completed)
                #expect(counts == counts.sorted())
            }
        }
    }

    // MARK: Reconnecting

    /// A router serving `progress` at `/progress`, resuming after the request's `Last-Event-ID`.
    static func resumingRouter(_ progress: TaskProgress) -> HTTPRouter {
        var router = HTTPRouter()
        router.get("/progress") { request in
            .progressEvents(progress, resumingAfter: request.head.headerFields[.lastEventID], keepAlive: nil)
        }
        return router
    }

    /// Opens `/progress` on `client` (with `Last-Event-ID` when given) and returns the events it has
    /// received once its loop is idle.
    static func openEvents(_ client: HTTPTestClient, lastEventID: String? = nil) throws -> [(kind: String, id: String, completed: Int)] {
        try client.send("GET /progress HTTP/1.1\r\nHost: t\r\n" + (lastEventID.map { "Last-Event-ID: \($0)\r\n" } ?? "") + "\r\n")
        try client.runUntilIdle()
        return events(in: client.receivedText)
    }

    /// Each connection (here, each on a loop of its own, one after the other) goes on from the ids the
    /// progress's earlier events took, rather than starting again at 1.
    @Test func eventIDsContinueAcrossConnections() throws {
        let progress = TaskProgress(totalUnitCount: 100)
        let router = Self.resumingRouter(progress)
        let first = try HTTPTestClient(router: router)
        progress.completedUnitCount = 10
        #expect(try Self.openEvents(first).map(\.id) == ["1"])
        progress.completedUnitCount = 20
        try first.runUntilIdle()
        #expect(Self.events(in: first.receivedText).map(\.id) == ["1", "2"])
        try first.close()
        progress.completedUnitCount = 30
        let second = try HTTPTestClient(router: router)
        let events = try Self.openEvents(second)
        #expect(events.map(\.id) == ["3"])
        #expect(events.map(\.completed) == [30])
    }

    /// A client back with `Last-Event-ID` gets nothing it has seen: the current state only if it is newer
    /// than that id, then what follows.
    @Test func aReconnectIsSentOnlyWhatFollowsItsLastEventID() throws {
        let progress = TaskProgress(totalUnitCount: 100)
        let router = Self.resumingRouter(progress)
        let first = try HTTPTestClient(router: router)
        progress.completedUnitCount = 10
        let seen = try #require(try Self.openEvents(first).last)
        try first.close()
        // Nothing changed while it was away: nothing is sent until something does.
        let unchanged = try HTTPTestClient(router: router)
        #expect(try Self.openEvents(unchanged, lastEventID: seen.id).isEmpty)
        progress.completedUnitCount = 40
        try unchanged.runUntilIdle()
        let next = Self.events(in: unchanged.receivedText)
        #expect(next.map(\.completed) == [40])
        #expect(next.allSatisfy { Int($0.id)! > Int(seen.id)! })
        // A client that left before that change gets the current state at once.
        let behind = try HTTPTestClient(router: router)
        #expect(try Self.openEvents(behind, lastEventID: seen.id).map(\.completed) == [40])
    }

    /// The WHATWG way to stop an `EventSource` that reconnects: 204 once its `Last-Event-ID` is the final
    /// event's. A new viewer (no id) or one that missed the end still gets the final state.
    @Test func aReconnectThatHasSeenTheFinalEventIsAnsweredNoContent() throws {
        let progress = TaskProgress(totalUnitCount: 10)
        let router = Self.resumingRouter(progress)
        let client = try HTTPTestClient(router: router)
        try client.send("GET /progress HTTP/1.1\r\nHost: t\r\n\r\n")
        try client.runUntilIdle()
        progress.completedUnitCount = 10
        let events = Self.events(in: try client.nextResponse().text)
        let final = try #require(events.last)
        #expect(final.kind == "finished")
        let reconnect = try client.execute(.get, "/progress", headerFields: [.lastEventID: final.id])
        #expect(reconnect.status == .noContent)
        #expect(reconnect.body.isEmpty)
        let newViewer = try client.execute(.get, "/progress")
        #expect(newViewer.status == .ok)
        #expect(Self.events(in: newViewer.text).map(\.id) == [final.id])
        let missedTheEnd = try client.execute(.get, "/progress", headerFields: [.lastEventID: events[0].id])
        #expect(Self.events(in: missedTheEnd.text).map(\.kind) == ["finished"])
    }

    /// An id this progress never gave (another server's, a made-up one) is ignored: the stream starts from
    /// the current state.
    @Test func anUnknownLastEventIDIsIgnored() throws {
        let progress = TaskProgress(totalUnitCount: 10)
        progress.completedUnitCount = 4
        let client = try HTTPTestClient(router: Self.resumingRouter(progress))
        for unknown in ["999", "x", "-1"] {
            let other = try HTTPTestClient(router: Self.resumingRouter(progress))
            #expect(try Self.openEvents(other, lastEventID: unknown).map(\.completed) == [4], "Last-Event-ID: \(unknown)")
        }
        progress.completedUnitCount = 10
        #expect(try client.execute(.get, "/progress", headerFields: [.lastEventID: "999"]).status == .ok)
    }

    /// Streams on two loops number the states each observes: a loop that read a state before the final
    /// one, and numbers it after another loop numbered the final one, gets no id for it (it is not sent),
    /// and the final state keeps its one id however often it is observed.
    @Test func aStateNumberedAfterTheFinalOneIsStale() {
        let progress = TaskProgress(totalUnitCount: 10)
        let ids = ProgressEventIDs.of(progress)
        progress.completedUnitCount = 5
        let stale = progress.snapshot()
        progress.completedUnitCount = 10
        let final = ids.id(for: progress.snapshot())
        #expect(final == 1)
        #expect(ids.id(for: stale) == nil)
        #expect(ids.id(for: progress.snapshot()) == final)
        #expect(ProgressEventIDs.of(progress) === ids)  // one numbering per progress
    }

    /// The `event:` and `id:` lines and the JSON's `completed` field of every event in `text`.
    static func events(in text: String) -> [(kind: String, id: String, completed: Int)] {
        text.components(separatedBy: "\n\n").compactMap { block in
            var kind = "message", id = "", completed = -1
            for line in block.split(separator: "\n") {
                if line.hasPrefix("event: ") { kind = String(line.dropFirst(7)) }
                if line.hasPrefix("id: ") { id = String(line.dropFirst(4)) }
                if line.hasPrefix("data: "), let range = line.range(of: "\"completed\":") {
                    completed = Int(line[range.upperBound...].prefix { $0.isNumber }) ?? -1
                }
            }
            return completed >= 0 ? (kind, id, completed) : nil
        }
    }

    // MARK: A real client

    @Test func curlReadsTheEventStream() async throws {
        try await withServer(router: Self.router()) { _, port in
            let result = try await run("/usr/bin/curl", ["-sS", "-N", "http://127.0.0.1:\(port)/three"])
            #expect(result.status == 0)
            #expect(result.output == Self.threeEvents)
        }
    }
}

/// Blocking clients handed to a thread of their own (test code: one thread uses them at a time).
final class Clients: @unchecked Sendable {
    let all: [RawClient]
    init(_ all: [RawClient]) { self.all = all }
}

/// A flag set once, from any thread.
final class Flag: Sendable {
    private let value = Atomic<Bool>(false)
    func set() { value.store(true, ordering: .releasing) }
    var isSet: Bool { value.load(ordering: .acquiring) }
}
