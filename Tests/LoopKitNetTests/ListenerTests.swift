import Glibc
import LoopKit
import LoopKitNet
import Testing

@Suite("Listening: addresses, errors, SO_REUSEPORT groups, pause and resume")
struct ListenerTests {
    @Test func portZeroPicksAFreePortAndReportsIt() throws {
        let group = try LoopGroup(threads: 1)
        defer { group.shutdown() }
        let listener = try TCPListener.bind(host: "127.0.0.1", port: 0, on: group.loops[0], onAccept: echoByCallbacks)
        #expect(listener.localAddress.host == "127.0.0.1")
        #expect(listener.localAddress.port > 0)
        #expect(listener.localAddress.description == "127.0.0.1:\(listener.localAddress.port)")
        listener.close()
    }

    @Test func aPortInUseIsATypedError() throws {
        let group = try LoopGroup(threads: 1)
        defer { group.shutdown() }
        let first = try TCPListener.bind(host: "127.0.0.1", port: 0, on: group.loops[0], onAccept: echoByCallbacks)
        defer { first.close() }
        #expect(throws: NetError.addressInUse(first.localAddress)) {
            _ = try TCPListener.bind(to: first.localAddress, on: group.loops[0], onAccept: echoByCallbacks)
        }
    }

    @Test func aBadAddressIsATypedError() throws {
        let group = try LoopGroup(threads: 1)
        defer { group.shutdown() }
        #expect(throws: NetError.self) {
            _ = try TCPListener.bind(host: "300.1.2.3", port: 0, on: group.loops[0], onAccept: echoByCallbacks)
        }
        #expect(throws: NetError.self) { _ = try SocketAddress(ipAddress: "127.0.0.1", port: 70_000) }
        do {
            _ = try TCPListener.bind(host: "203.0.113.7", port: 0, on: group.loops[0], onAccept: echoByCallbacks)
            Issue.record("bound an address no interface has")
        } catch {
            guard case .invalidAddress = error else { Issue.record("unexpected \(error)"); return }
        }
    }

    @Test(.enabled(if: getuid() != 0, "root may bind privileged ports"))
    func aPrivilegedPortIsAPermissionError() throws {
        let group = try LoopGroup(threads: 1)
        defer { group.shutdown() }
        do {
            _ = try TCPListener.bind(host: "127.0.0.1", port: 80, on: group.loops[0], onAccept: echoByCallbacks)
            Issue.record("bound port 80 without privileges")
        } catch {
            guard case .permissionDenied = error else { Issue.record("unexpected \(error)"); return }
        }
    }

    @Test func aTwoLoopGroupSharesOnePortAndBothLoopsAccept() async throws {
        let group = try LoopGroup(threads: 2)
        defer { group.shutdown() }
        let acceptedOn = Recorder<Int>()
        let loops = group.loops
        let listener = try TCPListener.bind(host: "127.0.0.1", port: 0, on: group, onAccept: { connection in
            acceptedOn.record(loops.firstIndex { $0 === connection.loop } ?? -1)
            echoByCallbacks(connection)
        })
        #expect(listener.loops.count == 2)
        try await onLoop(loops[0]) {
            var clients: [Connection] = []
            for _ in 0..<40 {
                clients.append(try await Connection.connect(to: listener.localAddress, on: loops[0]))
            }
            for client in clients {
                try await client.send("x")
                _ = try await readBytes(1, from: client)
                client.close()
            }
        }
        #expect(Set(acceptedOn.all) == [0, 1])
        await listener.shutdown()
    }

    @Test func aPausedListenerAcceptsOnlyOnceResumed() async throws {
        let group = try LoopGroup(threads: 1)
        defer { group.shutdown() }
        let accepted = Recorder<Bool>()
        let listener = try TCPListener.bind(host: "127.0.0.1", port: 0, on: group.loops[0], onAccept: { connection in
            accepted.record(true)
            echoByCallbacks(connection)
        })
        listener.pause()
        let loop = group.loops[0]
        let client = try await onLoop(loop) { try await Connection.connect(to: listener.localAddress, on: loop) }
        try await onLoop(loop) { try await client.send("p") }  // queued in the kernel's backlog
        try await read(on: loop) { () }  // one more iteration of the loop after the connect
        #expect(accepted.all.isEmpty)
        listener.resume()
        let echoed = try await onLoop(loop) { try await readBytes(1, from: client) }
        #expect(echoed == Array("p".utf8))
        #expect(accepted.all.count == 1)
        try await read(on: loop) { client.close() }
        await listener.shutdown()
    }

    @Test func theBacklogAskedForIsTheAcceptQueue() async throws {
        // While the listener is paused, the kernel completes handshakes only while its accept queue has
        // room: with a backlog of 300, 200 connects complete (libevent's default of 128 would leave the
        // rest waiting on dropped SYNs).
        let group = try LoopGroup(threads: 1)
        defer { group.shutdown() }
        var options = ListenerOptions()
        options.backlog = 300
        let listener = try TCPListener.bind(host: "127.0.0.1", port: 0, on: group.loops[0], options: options, onAccept: { _ in })
        listener.pause()
        try await read(on: group.loops[0]) { () }  // the pause has happened
        let completed = connectNonBlocking(200, to: listener.localAddress.port, waitingAtMost: .seconds(10))
        #expect(completed == 200)
        await listener.shutdown()
    }

    @Test func anAcceptCallbackThatThrowsClosesTheConnection() async throws {
        struct Refused: Error {}
        let group = try LoopGroup(threads: 1)
        defer { group.shutdown() }
        let reasons = Recorder<CloseReason>()
        // A trailing closure that does not await is the loop-thread callback, throwing or not.
        let listener = try TCPListener.bind(host: "127.0.0.1", port: 0, on: group.loops[0]) { connection in
            connection.onClose { reasons.record($0) }
            try connection.write("refused")
            throw Refused()
        }
        let loop = group.loops[0]
        let received = try await onLoop(loop) {
            let client = try await Connection.connect(to: listener.localAddress, on: loop)
            return try await readToEnd(from: client)
        }
        #expect(String(decoding: received, as: UTF8.self) == "refused")  // flushed, then closed
        #expect(await eventually { reasons.all == [.closedLocally] })
        await listener.shutdown()
    }

    @Test func shutdownClosesAcceptedConnectionsGracefully() async throws {
        let group = try LoopGroup(threads: 1)
        defer { group.shutdown() }
        let reasons = Recorder<CloseReason>()
        let listener = try TCPListener.bind(host: "127.0.0.1", port: 0, on: group.loops[0], onAccept: { connection in
            connection.onClose { reasons.record($0) }
            try? connection.write("bye")
        })
        let loop = group.loops[0]
        let client = try await onLoop(loop) { try await Connection.connect(to: listener.localAddress, on: loop) }
        #expect(await eventually { listener.connectionCount == 1 })
        await listener.shutdown()
        #expect(reasons.all == [.closedLocally])
        let received = try await onLoop(loop) { try await readToEnd(from: client) }
        #expect(received == Array("bye".utf8))
    }
}
