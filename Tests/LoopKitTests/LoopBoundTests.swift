import LoopKit
import LoopKitTesting
import Synchronization
import Testing

/// `LoopBound`: seed 001's invoke/queue proxy, typed. Any thread reaches the value only through the loop.
@Suite("LoopBound")
struct LoopBoundTests {
    /// A value that is deliberately not `Sendable`, like a view model.
    final class Table {
        var rows: [String] = []
        var isEditing = false
    }

    @Test("value and withValue work directly on the loop's thread")
    func directAccessOnTheLoopThread() throws {
        let driver = try LoopDriver()
        let table = LoopBound(Table(), on: driver.loop)
        table.value.rows.append("a")
        table.withValue { $0.isEditing = true }
        #expect(table.value.rows == ["a"])
        #expect(table.withValue { $0.isEditing })
    }

    @Test("invoke runs inline on the loop thread (R5)")
    func invokeRunsInlineOnTheLoopThread() throws {
        let driver = try LoopDriver()
        let trace = OrderTrace(driver.loop)
        let table = LoopBound(Table(), on: driver.loop)
        try table.invoke { table in
            table.isEditing = true
            trace.record("invoke")
        }
        trace.record("returned")
        #expect(trace.description == "0:invoke 0:returned")
        #expect(table.value.isEditing)
    }

    @Test("invoke from another thread queues the work for the loop, in order (R1, R5)")
    func invokeFromAnotherThreadQueues() throws {
        let driver = try LoopDriver()
        let table = LoopBound(Table(), on: driver.loop)
        onAnotherThread {
            for n in 0..<3 { try! table.invoke { $0.rows.append("r\(n)") } }
        }
        #expect(table.value.rows.isEmpty)
        try driver.step()
        #expect(table.value.rows == ["r0", "r1", "r2"])
    }

    @Test("enqueue runs in the next iteration, even from the loop thread (R2, R3)")
    func enqueueRunsInTheNextIteration() throws {
        let driver = try LoopDriver()
        let trace = OrderTrace(driver.loop)
        let table = LoopBound(Table(), on: driver.loop)
        try driver.loop.enqueue {
            try! table.enqueue { _ in trace.record("queued") }
            trace.record("after enqueue")
        }
        try driver.step(2)
        #expect(trace.description == "1:after enqueue 2:queued")
    }

    @Test("invokeAndWait runs inline on the loop thread and returns the result")
    func invokeAndWaitOnTheLoopThread() throws {
        let driver = try LoopDriver()
        let table = LoopBound(Table(), on: driver.loop)
        let count = try table.invokeAndWait { table -> Int in
            table.rows = ["a", "b"]
            return table.rows.count
        }
        #expect(count == 2)
    }

    @Test("invokeAndWait from another thread waits for the loop and returns its result or error (R6)")
    func invokeAndWaitFromAnotherThread() throws {
        let group = try LoopGroup(threads: 1)
        defer { group.shutdown() }
        let loop = group.next()
        let table = try loop.invokeAndWait { LoopBound(Table(), on: loop) }
        let (count, onLoop) = try table.invokeAndWait { table -> (Int, Bool) in
            table.rows.append("x")
            return (table.rows.count, loop.isCurrent)
        }
        #expect(count == 1 && onLoop)
        struct Failure: Error {}
        #expect(throws: Failure.self) { try table.invokeAndWait { _ in throw Failure() } }
    }

    @Test("perform reaches the value from a task")
    func performFromATask() async throws {
        let group = try LoopGroup(threads: 1)
        defer { group.shutdown() }
        let loop = group.next()
        let table = LoopBound(Table(), on: loop)  // the value is sent to the loop
        let count = try await table.perform { table -> Int in
            table.rows += ["a", "b", "c"]
            return table.rows.count
        }
        #expect(count == 3)
    }

    @Test("a shut-down loop refuses invoke, enqueue and invokeAndWait")
    func shutDownLoopRefuses() throws {
        let driver = try LoopDriver()
        let table = LoopBound(Table(), on: driver.loop)
        driver.loop.shutdown()
        let refused = onAnotherThread { () -> [Bool] in
            [
                (try? table.invoke { _ in }) == nil,
                (try? table.enqueue { _ in }) == nil,
                (try? table.invokeAndWait { _ in 1 }) == nil,
            ]
        }
        #expect(refused == [true, true, true])
    }

    @Test("LoopBound is Sendable: the handle crosses threads, the value does not")
    func handleIsSendable() throws {
        let driver = try LoopDriver()
        let table = LoopBound(Table(), on: driver.loop)
        let loopOfHandle = onAnotherThread { table.loop === driver.loop }
        #expect(loopOfHandle)
    }

    @Test("reading value off the loop's thread stops the process")
    func valueOffTheLoopThreadTraps() async {
        await #expect(processExitsWith: .failure) {
            let loop = try! EventLoop()
            let bound = LoopBound(Table(), on: loop)
            onAnotherThread { _ = bound.value.rows }
        }
    }

    @Test("the trap's message names perform and an actor, not only invokeAndWait")
    func offTheLoopTrapMessageNamesPerformAndAnActor() async throws {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let loop = try! EventLoop()
            let bound = LoopBound(Table(), on: loop)
            onAnotherThread { _ = bound.value.rows }
        }
        let message = String(decoding: try #require(result).standardErrorContent, as: UTF8.self)
        #expect(message.contains("try await bound.perform { }"))
        #expect(message.contains("an actor"))
    }

    @Test("withValue off the loop's thread stops the process")
    func withValueOffTheLoopThreadTraps() async {
        await #expect(processExitsWith: .failure) {
            let loop = try! EventLoop()
            let bound = LoopBound(0, on: loop)
            onAnotherThread { bound.withValue { $0 += 1 } }
        }
    }
}
