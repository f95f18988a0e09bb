#if canImport(Glibc)
import Glibc
#endif
import LoopKit
@testable import LoopKitNet
import LoopKitNetTesting
import LoopKitTesting
import Testing

/// A loop that shuts down under its listeners and connections ends them: each connection once, with
/// ``CloseReason/shutDown``, its waiters resumed, its socket closed.
@Suite("Loop shutdown ends what lives on the loop")
struct LoopShutdownTests {
    @Test func aLoopShuttingDownEndsItsConnectionsAndResumesTheirReaders() async throws {
        let serverGroup = try LoopGroup(threads: 1)
        let clientGroup = try LoopGroup(threads: 1)
        defer { clientGroup.shutdown() }
        let serverLoop = serverGroup.loops[0], clientLoop = clientGroup.loops[0]
        let reasons = Recorder<CloseReason>()
        let readerEnds = Recorder<String>()
        let listener = try TCPListener.bind(host: "127.0.0.1", port: 0, on: serverLoop) { connection in
            connection.onClose { reasons.record($0) }
            do {
                for try await _ in connection.inbound {}
                readerEnds.record("end of input")
            } catch {
                readerEnds.record("\(error)")
            }
        }
        let port = listener.localAddress.port
        let client = try await onLoop(clientLoop) { try await Connection.connect(to: listener.localAddress, on: clientLoop) }
        #expect(await eventually { listener.connectionCount == 1 })

        serverGroup.shutdown()  // no listener.shutdown(): the loop's own shutdown must end everything

        #expect(reasons.all == [.shutDown])
        #expect(readerEnds.all == ["\(NetError.connectionClosed(.shutDown))"])
        #expect(listener.connectionCount == 0)
        let received = try await onLoop(clientLoop) { try await readToEnd(from: client) }
        #expect(received.isEmpty)  // the server's side closed cleanly: the client reads end of file
        #expect(openDescriptors(onPort: port) == 0)  // listening socket and both ends closed
        await listener.shutdown()  // after the loop's end: returns at once, nothing left to do
    }

    @Test func bothEndsOfAnInMemoryPairEndWithTheirLoop() throws {
        let driver = try LoopDriver()
        let pair = try InMemoryConnectionPair(driver: driver)
        let reasons = Recorder<String>()
        pair.client.onClose { reasons.record("client: \($0)") }
        pair.server.onClose { reasons.record("server: \($0)") }
        let server = pair.server
        let reader = Task(executorPreference: driver.loop) {
            do {
                for try await _ in server.inbound {}
                reasons.record("reader: end of input")
            } catch {
                reasons.record("reader: \(error)")
            }
        }
        try driver.step(3)  // the reader waits for input
        driver.loop.shutdown()
        #expect(reasons.all == [
            "client: \(CloseReason.shutDown)", "server: \(CloseReason.shutDown)",
            "reader: \(NetError.connectionClosed(.shutDown))",
        ])
        _ = reader
    }

    /// A file send (`sendfile(2)`) waiting for a client that reads nothing is a waiter like a reader or a
    /// writer: the loop's shutdown resumes it with the error they get, `connectionClosed(.shutDown)`.
    @Test func aFileSendWaitingForTheSocketEndsWithTheLoopAsReadersDo() async throws {
        var template = Array("/tmp/loopkit-sendfile-XXXXXX".utf8CString)
        let file = mkstemp(&template)
        try #require(file >= 0)
        unlink(template)  // the descriptor keeps it; nothing is left on disk
        defer { close(file) }
        let size: Int64 = 32 * 1024 * 1024  // far more than a client that never reads lets the buffers hold
        try #require(ftruncate(file, off_t(size)) == 0)
        let serverGroup = try LoopGroup(threads: 1)
        let clientGroup = try LoopGroup(threads: 1)
        defer { clientGroup.shutdown() }
        let serverLoop = serverGroup.loops[0], clientLoop = clientGroup.loops[0]
        let events = Recorder<String>()
        let listener = try TCPListener.bind(host: "127.0.0.1", port: 0, on: serverLoop) { connection in
            events.record("sending")  // from here to the send's wait, the loop's thread runs on: no shutdown between
            do {
                let sent = try await connection.sendFile(file, from: 0, count: size)
                events.record("sent \(sent)")
            } catch {
                events.record("\(error) after \(connection.sentByteCount > 0 ? "some" : "no") bytes")
            }
        }
        let client = try await onLoop(clientLoop) { try await Connection.connect(to: listener.localAddress, on: clientLoop) }
        #expect(await eventually { events.all == ["sending"] })

        serverGroup.shutdown()

        #expect(events.all == ["sending", "\(NetError.connectionClosed(.shutDown)) after some bytes"])
        #expect(listener.connectionCount == 0)
        try await onLoop(clientLoop) { client.abort() }
        await listener.shutdown()
    }

    @Test func aConnectInFlightWhenItsLoopShutsDownFailsWithLoopShutDown() async throws {
        let unanswered = try UnansweredAddress()  // a full accept queue: the SYN gets no answer
        defer { unanswered.close() }
        let group = try LoopGroup(threads: 1)
        let loop = group.loops[0]
        let address = unanswered.address
        let outcome = Task {
            do {
                // An hour: under the thread sanitizer on a loaded machine, the shutdown below came more
                // than a minute later once, and the connect's own timeout ended it first.
                _ = try await Connection.connect(to: address, on: loop, timeout: .seconds(3_600))
                return "connected"
            } catch {
                return "\(error)"
            }
        }
        // Let the connect get under way; whether it has or not, the outcome must be the same.
        await Task.yield()
        try await read(on: loop) { () }
        try await read(on: loop) { () }
        group.shutdown()
        let told = await outcome.value
        #expect(told == "\(NetError.loopShutDown)", "the connect ended with \(told)")  // told at once, not after an hour
    }

    @Test func aConnectOnALoopThatShutDownFailsWithLoopShutDown() async throws {
        let group = try LoopGroup(threads: 1)
        let loop = group.loops[0]
        group.shutdown()
        await #expect(throws: NetError.loopShutDown) {
            _ = try await Connection.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 9), on: loop)
        }
    }
}

