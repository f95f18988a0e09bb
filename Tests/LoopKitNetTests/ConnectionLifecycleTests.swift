import Glibc
import LoopKit
import LoopKitNet
import Testing

@Suite("Connection lifecycle: half-close, peer reset, close reasons, SIGPIPE, fd hygiene")
struct ConnectionLifecycleTests {
    @Test func halfCloseKeepsReadingAfterTheOutputIsShutDown() async throws {
        let group = try LoopGroup(threads: 1)
        defer { group.shutdown() }
        var options = ListenerOptions()
        options.connection.allowsHalfClosure = true
        // The server reads to the end, then answers with the byte count: only possible with half-close.
        let listener = try TCPListener.bind(host: "127.0.0.1", port: 0, on: group.loops[0], options: options) { connection in
            let received = try await readToEnd(from: connection)
            try await connection.send("got \(received.count)")
        }
        let loop = group.loops[0]
        let answer = try await onLoop(loop) {
            let client = try await Connection.connect(to: listener.localAddress, on: loop)
            try await client.send(Bytes(Array(repeating: 1, count: 5_000)))
            client.shutdownOutput()
            #expect(throws: NetError.self) { try client.write("late") }
            let answer = try await readToEnd(from: client)
            #expect(client.isClosed)
            #expect(client.closeReason == .peerClosed)
            return answer
        }
        #expect(String(decoding: answer, as: UTF8.self) == "got 5000")
        await listener.shutdown()
    }

    @Test func withoutHalfClosurePeerEndOfFileClosesTheConnection() async throws {
        let group = try LoopGroup(threads: 1)
        defer { group.shutdown() }
        let reasons = Recorder<CloseReason>()
        let listener = try TCPListener.bind(host: "127.0.0.1", port: 0, on: group.loops[0], onAccept: { connection in
            connection.onClose { reasons.record($0) }
        })
        let loop = group.loops[0]
        try await onLoop(loop) {
            let client = try await Connection.connect(to: listener.localAddress, on: loop)
            client.shutdownOutput()
        }
        #expect(await eventually { reasons.all == [.peerClosed] })
        await listener.shutdown()
    }

    @Test func aPeerResetEndsTheConnectionWithResetOnce() async throws {
        let group = try LoopGroup(threads: 1)
        defer { group.shutdown() }
        let reasons = Recorder<CloseReason>()
        let listener = try TCPListener.bind(host: "127.0.0.1", port: 0, on: group.loops[0], onAccept: { connection in
            connection.onClose { reasons.record($0) }
            connection.onRead { _ in 0 }
        })
        let loop = group.loops[0]
        try await onLoop(loop) {
            let client = try await Connection.connect(to: listener.localAddress, on: loop)
            try await client.send("x")
            client.abort()
            #expect(client.closeReason == .aborted)
        }
        #expect(await eventually { !reasons.all.isEmpty })
        #expect(reasons.all == [.reset])
        await listener.shutdown()
    }

    @Test func writingToAVanishedPeerEndsTheConnectionWithoutSIGPIPE() async throws {
        let group = try LoopGroup(threads: 1)
        defer { group.shutdown() }
        let listener = try TCPListener.bind(host: "127.0.0.1", port: 0, on: group.loops[0], onAccept: { connection in
            connection.abort()
        })
        let loop = group.loops[0]
        let reason = try await onLoop(loop) { () async throws -> CloseReason? in
            let client = try await Connection.connect(to: listener.localAddress, on: loop)
            let chunk = Bytes(Array(repeating: 0, count: 64 * 1024))
            for _ in 0..<200 {
                do { try await client.send(chunk) } catch { break }
                try await Task.sleep(for: .milliseconds(1))
            }
            return client.closeReason
        }
        #expect(reason == .reset || reason == .brokenPipe)
        await listener.shutdown()
    }

    @Test func tenThousandConnectCloseCyclesLeakNoDescriptor() async throws {
        let group = try LoopGroup(threads: 1)
        defer { group.shutdown() }
        let listener = try TCPListener.bind(host: "127.0.0.1", port: 0, on: group.loops[0], onAccept: echoByCallbacks)
        let loop = group.loops[0]
        // One warm-up cycle so lazily opened descriptors (the resolver's, the loop's) are counted before.
        try await onLoop(loop) { try await Connection.connect(to: listener.localAddress, on: loop).close() }
        #expect(await eventually { listener.connectionCount == 0 })
        let before = openFileDescriptorCount()
        #expect(openDescriptors(onPort: listener.localAddress.port) == 1)  // the listening socket
        try await onLoop(loop) {
            for _ in 0..<10_000 {
                let client = try await Connection.connect(to: listener.localAddress, on: loop)
                client.close()
            }
        }
        #expect(await eventually { listener.connectionCount == 0 })
        #expect(openDescriptors(onPort: listener.localAddress.port) == 1)
        // (The process-wide /proc/self/fd total is not compared: other suites open descriptors in parallel.
        // The check above reads the same /proc/self/fd entries, restricted to this listener's port.)
        _ = before
        await listener.shutdown()
    }

    @Test func connectingToAClosedPortIsRefused() async throws {
        let group = try LoopGroup(threads: 1)
        defer { group.shutdown() }
        let loop = group.loops[0]
        // Tests run in parallel: another test's listener may take the port once it is free. A connect that
        // succeeds reached that listener, not ours; the test then tries another closed port (up to five).
        for _ in 0..<5 {
            let listener = try TCPListener.bind(host: "127.0.0.1", port: 0, on: loop, onAccept: echoByCallbacks)
            let address = listener.localAddress
            listener.close()
            try await read(on: loop) { () }
            do {
                let stranger = try await onLoop(loop) { try await Connection.connect(to: address, on: loop) }
                try await onLoop(loop) { stranger.close() }
            } catch let error as NetError {
                #expect(error == .connectionRefused(address))
                return
            }
        }
        Issue.record("five closed ports were each taken by another listener before the connect")
    }
}
