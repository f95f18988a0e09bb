import LoopKit
import LoopKitHTTP
import LoopKitHTTPTesting
import LoopKitTesting
import Testing
import TodoServiceApp

/// The service on two loops, in memory (the two clients on different loops) and live (on the loops the kernel picks).
@Suite("Todo service")
final class TodoServiceTests {
    let group = try! LoopGroup(threads: 2)
    let router = makeRouter(store: TodoStore(), room: Broadcast(), jobs: Jobs())
    deinit { group.shutdown() }

    func clients(_ mode: HTTPTestMode) throws -> (HTTPTestClient, HTTPTestClient) {
        let configuration = makeConfiguration()
        return (try HTTPTestClient(router: router, configuration: configuration, mode: mode, group: group),
                try HTTPTestClient(router: router, configuration: configuration, mode: mode, group: group))
    }

    @Test(arguments: HTTPTestMode.allCases)
    func todosAreSharedByBothLoops(mode: HTTPTestMode) throws {
        let (a, b) = try clients(mode)
        #expect(try a.execute(.post, "/todos", json: TodoDraft(title: "milk")).decode(as: Todo.self).id == 1)
        #expect(try b.execute(.put, "/todos/1", json: TodoDraft(title: "oat milk", done: true)).status == .ok)
        #expect(try a.execute(.get, "/todos").decode(as: [Todo].self) == [Todo(id: 1, title: "oat milk", done: true)])
        #expect(try b.execute(.delete, "/todos/1").status == .noContent)
        #expect(try a.execute(.get, "/todos/1").status == .notFound)
    }

    @Test(arguments: HTTPTestMode.allCases)
    func errorsAreJSON(mode: HTTPTestMode) throws {
        let (a, _) = try clients(mode)
        #expect(try a.execute(.get, "/todos/x").text == #"{"error":{"status":400,"message":"parameter id: expected an integer"}}"#)
        #expect(try a.execute(.post, "/todos", body: Bytes("{}")).text.contains(#""message":"invalid JSON body: missing field title""#))
        #expect(try a.execute(.get, "/todos/9").text == #"{"error":{"status":404,"message":"no todo 9"}}"#)
    }

    @Test(arguments: HTTPTestMode.allCases)
    func chatMessagesReachBothLoops(mode: HTTPTestMode) throws {
        let (a, b) = try clients(mode)
        let alice = try a.webSocket("/chat?name=alice")
        #expect(try alice.receive() == .text("alice joined"))
        let bob = try b.webSocket("/chat?name=bob")
        #expect(try bob.receive() == .text("bob joined"))
        #expect(try alice.receive() == .text("bob joined"))
        try bob.send("hi")
        #expect(try alice.receive() == .text("bob: hi"))
    }

    @Test func aJobStreamsItsProgressOnVirtualTime() throws {
        let driver = try LoopDriver()
        let clock = driver.clock
        let router = makeRouter(store: TodoStore(), room: Broadcast(), jobs: Jobs(), work: { _ in clock.advance(by: .microseconds(100)) })
        let client = try HTTPTestClient(router: router, driver: driver)
        #expect(try client.execute(.post, "/jobs?items=2000").text == #"{"id":1}"#)
        let events = try client.execute(.get, "/jobs/1/events").serverSentEvents
        #expect(events.filter { $0.event == "progress" }.count > 10)
        #expect(events.last?.event == "finished")
    }

    @Test func aJobWhoseOnlyViewerLeavesIsCancelled() throws {
        let driver = try LoopDriver()
        let clock = driver.clock
        let router = makeRouter(store: TodoStore(), room: Broadcast(), jobs: Jobs(), work: { _ in clock.advance(by: .microseconds(100)) })
        let viewer = try HTTPTestClient(router: router, driver: driver)
        _ = try viewer.execute(.post, "/jobs?items=2000")
        try viewer.send(HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/jobs/1/events"))
        #expect(try viewer.nextEvent()?.event == "progress")
        try viewer.close()
        let later = try HTTPTestClient(router: router, driver: driver)
        #expect(try later.execute(.get, "/jobs/1/events").serverSentEvents.last?.event == "cancelled")
    }
}
