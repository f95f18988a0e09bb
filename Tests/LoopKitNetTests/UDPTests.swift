import Foundation
import LoopKit
import LoopKitTesting
@testable import LoopKitNet
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// UDP on the loop: echo over 127.0.0.1 and ::1, batching, truncation, the traffic class, multicast and
/// broadcast, send-side backpressure, closed sockets and the loop's shutdown, the thread rule. Most tests
/// step a loop on the test's thread (loopback delivers a datagram before `sendmmsg` returns, so one step
/// sees it); the async ones run a task on a group's loop.
@Suite("UDP sockets")
struct UDPTests {
    /// An echo server on `driver`'s loop: every datagram answered to its sender, in the handler.
    static func echoServer(_ host: String, on loop: EventLoop, options: UDPOptions = UDPOptions()) throws -> UDPSocket {
        let server = try UDPSocket.bind(host: host, port: 0, on: loop, options: options)
        server.onDatagrams { batch in
            for datagram in batch { try! server.write(copying: datagram.payload, toSenderOf: datagram) }
        }
        return server
    }

    @Test(arguments: ["127.0.0.1", "::1"])
    func echoesWithCallbacks(host: String) throws {
        let driver = try LoopDriver()
        let server = try Self.echoServer(host, on: driver.loop)
        #expect(server.localAddress.port != 0)
        #expect(server.localAddress.family == (host == "::1" ? .ipv6 : .ipv4))
        let client = try UDPSocket.bind(host: host, port: 0, on: driver.loop)
        var answers: [String] = []
        var senders: [SocketAddress] = []
        client.onDatagrams { batch in
            for datagram in batch {
                answers.append(String(decoding: datagram.payload, as: UTF8.self))
                senders.append(datagram.sender)
            }
        }
        try client.write(Bytes("hello"), to: server.localAddress)
        try client.write(Bytes("loop"), to: server.localAddress)
        _ = try driver.step(3)
        #expect(answers == ["hello", "loop"])
        #expect(senders == [server.localAddress, server.localAddress])
        #expect(server.datagramsReceived == 2 && server.datagramsSent == 2)
        #expect(client.datagramsSent == 2 && client.datagramsReceived == 2)
        server.close()
        client.close()
    }

    @Test(arguments: ["127.0.0.1", "::1"])
    func echoesWithTheAsyncAPI(host: String) async throws {
        let group = try LoopGroup(threads: 1)
        defer { group.shutdown() }
        let loop = group.loops[0]
        let echoed = try await onLoop(loop) {
            let server = try UDPSocket.bind(host: host, port: 0, on: loop)
            Task(executorPreference: loop) {
                for try await datagram in server.datagrams { try await server.send(datagram.payload, to: datagram.sender) }
            }
            let client = try UDPSocket.bind(host: host, port: 0, on: loop)
            try client.connect(to: server.localAddress)
            var received: [String] = []
            var iterator = client.datagrams.makeAsyncIterator()
            for message in ["one", "two", "three"] {
                try await client.send(Bytes(message))
                let answer = try await iterator.next()
                received.append(answer.map { String(decoding: $0.payload, as: UTF8.self) } ?? "end")
                #expect(answer?.sender == server.localAddress)
            }
            client.close()
            #expect(try await iterator.next() == nil)  // closed locally: the sequence ends
            server.close()
            return received
        }
        #expect(echoed == ["one", "two", "three"])
    }

    @Test("One recvmmsg lends several datagrams to one callback, up to the batch size")
    func batchesSeveralDatagramsPerCallback() throws {
        let driver = try LoopDriver()
        var options = UDPOptions()
        options.receiveBatchSize = 8
        let server = try UDPSocket.bind(host: "127.0.0.1", port: 0, on: driver.loop, options: options)
        var batchSizes: [Int] = []
        var payloads: [UInt8] = []
        server.onDatagrams { batch in
            batchSizes.append(batch.count)
            for datagram in batch { payloads.append(datagram.payload[0]) }
        }
        let client = try UDPSocket.bind(host: "127.0.0.1", port: 0, on: driver.loop)
        for index in 0..<20 { try client.write(Bytes([UInt8(index)]), to: server.localAddress) }
        _ = try driver.step()
        #expect(batchSizes == [8, 8, 4])  // one readiness: up to four recvmmsg calls
        #expect(payloads == Array(0..<20))
        server.close()
        client.close()
    }

    @Test("A datagram larger than maximumDatagramSize arrives cut, flagged as truncated (MSG_TRUNC)")
    func reportsTruncation() async throws {
        let driver = try LoopDriver()
        var options = UDPOptions()
        options.maximumDatagramSize = 16
        let server = try UDPSocket.bind(host: "127.0.0.1", port: 0, on: driver.loop, options: options)
        var seen: [(Int, Bool)] = []
        server.onDatagrams { batch in for datagram in batch { seen.append((datagram.payload.count, datagram.isTruncated)) } }
        let client = try UDPSocket.bind(host: "127.0.0.1", port: 0, on: driver.loop)
        try client.write(Bytes(Array(repeating: 7, count: 100)), to: server.localAddress)
        try client.write(Bytes(Array(repeating: 7, count: 16)), to: server.localAddress)
        _ = try driver.step()
        #expect(seen.map(\.0) == [16, 16])
        #expect(seen.map(\.1) == [true, false])
        server.close()
        client.close()
    }

    @Test("The async sequence reports truncation too, and an empty datagram is a datagram")
    func asyncTruncationAndEmptyDatagrams() async throws {
        let group = try LoopGroup(threads: 1)
        defer { group.shutdown() }
        let loop = group.loops[0]
        let results = try await onLoop(loop) {
            var options = UDPOptions()
            options.maximumDatagramSize = 4
            let server = try UDPSocket.bind(host: "::1", port: 0, on: loop, options: options)
            let client = try UDPSocket.bind(host: "::1", port: 0, on: loop)
            try client.write(Bytes("truncated"), to: server.localAddress)
            try client.write(Bytes(), to: server.localAddress)
            var iterator = server.datagrams.makeAsyncIterator()
            let first = try await iterator.next()!
            let second = try await iterator.next()!
            server.close()
            client.close()
            return [String(decoding: first.payload, as: UTF8.self), "\(first.isTruncated)", "\(second.payload.count)", "\(second.isTruncated)"]
        }
        #expect(results == ["trun", "true", "0", "false"])
    }

    @Test(arguments: ["127.0.0.1", "::1"])
    func receivesTheTrafficClassWithItsECNBits(host: String) throws {
        let driver = try LoopDriver()
        var options = UDPOptions()
        options.receivesTrafficClass = true
        let server = try UDPSocket.bind(host: host, port: 0, on: driver.loop, options: options)
        var classes: [UInt8?] = []
        var codepoints: [ECN?] = []
        server.onDatagrams { batch in
            for datagram in batch {
                classes.append(datagram.trafficClass)
                codepoints.append(datagram.ecn)
            }
        }
        let client = try UDPSocket.bind(host: host, port: 0, on: driver.loop)
        try client.write(Bytes("plain"), to: server.localAddress)
        try client.setTrafficClass(0xb8 | ECN.ect0.rawValue)  // DSCP EF, ECT(0)
        try client.setTimeToLive(9)
        try client.write(Bytes("marked"), to: server.localAddress)
        _ = try driver.step()
        #expect(classes == [0, 0xba])
        #expect(codepoints == [.notECT, .ect0])
        #expect(throws: UDPError.invalidArgument("time to live must be in 1...255, got 0")) { try client.setTimeToLive(0) }
        server.close()
        client.close()
    }

    @Test("A member of an IPv4 multicast group on lo receives what is sent to the group; after leaving, it does not")
    func multicastJoinAndLeave() throws {
        let driver = try LoopDriver()
        var options = UDPOptions()
        options.reuseAddress = true
        let member = try UDPSocket.bind(host: "0.0.0.0", port: 0, on: driver.loop, options: options)
        var received: [String] = []
        member.onDatagrams { batch in for datagram in batch { received.append(String(decoding: datagram.payload, as: UTF8.self)) } }
        try member.joinMulticastGroup("239.255.42.99", interface: "lo")
        let sender = try UDPSocket.bind(host: "0.0.0.0", port: 0, on: driver.loop)
        try sender.setMulticastInterface("lo")
        try sender.setMulticastLoopback(true)
        try sender.setMulticastTimeToLive(1)
        let group = try SocketAddress(ipAddress: "239.255.42.99", port: member.localAddress.port)
        try sender.write(Bytes("to the group"), to: group)
        _ = try driver.step()
        #expect(received == ["to the group"])
        try member.leaveMulticastGroup("239.255.42.99", interface: "lo")
        try sender.write(Bytes("after leaving"), to: group)
        _ = try driver.step()
        #expect(received == ["to the group"])
        #expect(throws: UDPError.invalidArgument("'10.0.0.1' is not an IPv4 multicast group (224.0.0.0/4)")) {
            try member.joinMulticastGroup("10.0.0.1")
        }
        #expect(throws: UDPError.invalidArgument("no network interface named 'nope0'")) {
            try member.joinMulticastGroup("239.255.42.99", interface: "nope0")
        }
        #expect(throws: UDPError.self) { try member.leaveMulticastGroup("239.255.42.99", interface: "lo") }  // not a member
        member.close()
        sender.close()
    }

    @Test("IPv6: joining and leaving a group on lo, and a group of the wrong family refused")
    func multicastOverIPv6() throws {
        let driver = try LoopDriver()
        let member = try UDPSocket.bind(host: "::", port: 0, on: driver.loop)
        try member.joinMulticastGroup("ff02::4242", interface: "lo")
        try member.leaveMulticastGroup("ff02::4242", interface: "lo")
        #expect(throws: UDPError.invalidArgument("'239.1.1.1' is not an IPv6 multicast group (ff00::/8)")) {
            try member.joinMulticastGroup("239.1.1.1")
        }
        try member.setMulticastTimeToLive(2)
        try member.setMulticastInterface("lo")
        member.close()
    }

    @Test("Sending to the broadcast address needs setBroadcast(true): EACCES becomes permissionDenied")
    func broadcastNeedsTheOption() throws {
        let driver = try LoopDriver()
        let socket = try UDPSocket.bind(host: "0.0.0.0", port: 0, on: driver.loop)
        let broadcast = try SocketAddress(ipAddress: "255.255.255.255", port: 9)
        #expect(throws: UDPError.permissionDenied("sending to 255.255.255.255:9 needs setBroadcast(true)")) {
            try socket.write(Bytes("x"), to: broadcast)
        }
        try socket.setBroadcast(true)
        do {
            try socket.write(Bytes("x"), to: broadcast)
        } catch UDPError.unreachable {
            // A host without a route for it (no interface up but lo): the permission passed.
        }
        socket.close()
    }

    /// A Unix-domain datagram socketpair whose first end has the smallest send buffer: datagrams the other
    /// end has not read fill it, so the sender gets a real EAGAIN, which UDP over loopback never gives.
    static func datagramPair() -> (Int32, Int32) {
        var fds: [Int32] = [-1, -1]
        precondition(socketpair(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &fds) == 0)
        var smallest: Int32 = 1  // the kernel's minimum (4,608 bytes): a few datagrams in flight
        setsockopt(fds[0], SOL_SOCKET, SO_SNDBUF, &smallest, socklen_t(MemoryLayout<Int32>.size))
        return (fds[0], fds[1])
    }

    /// Reads every datagram waiting on `fd`.
    static func drain(_ fd: Int32) -> Int {
        var buffer = [UInt8](repeating: 0, count: 2048)
        var count = 0
        while recv(fd, &buffer, buffer.count, 0) >= 0 { count += 1 }
        return count
    }

    @Test("Backpressure: EAGAIN queues, the queue is bounded, isWritable follows the watermarks, onWritable once drained")
    func sendQueueAndWritableCallback() throws {
        let driver = try LoopDriver()
        let (mine, theirs) = Self.datagramPair()
        defer { close(theirs) }
        var options = UDPOptions()
        options.sendQueueLimit = 20
        options.sendHighWaterMark = 10
        options.sendLowWaterMark = 2
        let socket = try UDPSocket.adopting(connectedDatagramSocket: mine, peer: try SocketAddress(unixDomainSocketPath: "/pair"),
                                            on: driver.loop, options: options)
        var writableCalls = 0
        socket.onWritable { writableCalls += 1 }
        var refused: UDPError?
        var written = 0
        for index in 0..<100 {
            do {
                try socket.write(Bytes([UInt8(index)]))
                written += 1
            } catch {
                refused = error
                break
            }
        }
        #expect(refused == .sendQueueFull(limit: 20))
        #expect(socket.queuedDatagramCount == 20)
        #expect(written > 20)  // the kernel took some at once
        #expect(!socket.isWritable)
        _ = try driver.step()
        #expect(writableCalls == 0)  // nothing drained
        var delivered = Self.drain(theirs)
        while socket.queuedDatagramCount > 0 {
            _ = try driver.step()
            delivered += Self.drain(theirs)
        }
        #expect(delivered == written)  // nothing lost, nothing twice
        #expect(writableCalls == 1)
        #expect(socket.isWritable)
        #expect(socket.datagramsSent == UInt64(written))
        socket.close()
    }

    @Test("The async send suspends above the high-water mark and resumes once the queue drains to the low-water mark")
    func asyncSendSuspendsAboveTheHighWaterMark() async throws {
        let group = try LoopGroup(threads: 1)
        defer { group.shutdown() }
        let loop = group.loops[0]
        let (mine, theirs) = Self.datagramPair()
        defer { close(theirs) }
        let progress = Recorder<Int>()
        let sender = Task(executorPreference: loop) { () async throws(UDPError) -> Int in
            var options = UDPOptions()
            options.sendHighWaterMark = 4
            options.sendLowWaterMark = 1
            let socket = try! UDPSocket.adopting(connectedDatagramSocket: mine, peer: try! SocketAddress(unixDomainSocketPath: "/pair"),
                                                 on: loop, options: options)
            for index in 0..<40 {
                try await socket.send(Bytes([UInt8(index)]))
                progress.record(index)
                #expect(socket.queuedDatagramCount <= 5)
            }
            // Closing drops what is queued (UDP): wait until the kernel has taken everything.
            while socket.queuedDatagramCount > 0 { try? await Task.sleep(for: .milliseconds(1)) }
            socket.close()
            return 40
        }
        // The kernel takes a few, the queue 5 more, then the sender waits for this side to read.
        #expect(await eventually { progress.all.count >= 3 })
        try await Task.sleep(for: .milliseconds(50))
        let stalled = progress.all.count
        #expect(stalled < 40)
        let delivered = Recorder<Int>()
        let drained = await eventually {
            delivered.record(Self.drain(theirs))
            return delivered.all.reduce(0, +) >= 40
        }
        #expect(drained, "delivered \(delivered.all.reduce(0, +)) of 40, sent \(progress.all.count)")
        // A send still waiting is ended by the loop's shutdown (deferred), not awaited here: the test fails
        // rather than hangs.
        guard drained else { return }
        #expect(try await sender.value == 40)
        #expect(delivered.all.reduce(0, +) == 40)
    }

    @Test("A closed socket refuses every operation with .closed; the loop's shutdown ends waiters with .loopShutDown")
    func closedSocketsAndShutdown() async throws {
        let driver = try LoopDriver()
        let socket = try UDPSocket.bind(host: "127.0.0.1", port: 0, on: driver.loop)
        let peer = socket.localAddress
        socket.close()
        socket.close()  // twice: nothing
        #expect(socket.isClosed)
        #expect(throws: UDPError.closed) { try socket.write(Bytes("x"), to: peer) }
        #expect(throws: UDPError.closed) { try socket.connect(to: peer) }
        #expect(throws: UDPError.closed) { try socket.setBroadcast(true) }
        #expect(throws: UDPError.closed) { try socket.joinMulticastGroup("239.1.1.1") }

        let open = try UDPSocket.bind(host: "127.0.0.1", port: 0, on: driver.loop)
        #expect(throws: UDPError.notConnected) { try open.write(Bytes("x")) }
        #expect(throws: UDPError.addressFamilyMismatch(try SocketAddress(ipAddress: "::1", port: 9))) {
            try open.write(Bytes("x"), to: try SocketAddress(ipAddress: "::1", port: 9))
        }
        #expect(throws: UDPError.datagramTooLarge(size: 70_000)) {
            try open.write(Bytes(Array(repeating: 0, count: 70_000)), to: peer)
        }
        let outcome = Recorder<String>()
        Task(executorPreference: driver.loop) {
            do {
                for try await _ in open.datagrams {}
                outcome.record("ended")
            } catch {
                outcome.record("\(error)")
            }
        }
        _ = try driver.step()  // the consumer suspends
        driver.loop.shutdown()
        _ = try driver.runUntilIdle()
        #expect(outcome.all == [UDPError.loopShutDown.description])
        #expect(open.isClosed)
        #expect(throws: NetError.loopShutDown) { try UDPSocket.bind(host: "127.0.0.1", port: 0, on: driver.loop) }
    }

    @Test("Binding: a port in use, a Unix-domain address and bad options are refused with a NetError")
    func bindingErrors() throws {
        let driver = try LoopDriver()
        let first = try UDPSocket.bind(host: "127.0.0.1", port: 0, on: driver.loop)
        #expect(throws: NetError.addressInUse(first.localAddress)) {
            try UDPSocket.bind(to: first.localAddress, on: driver.loop)
        }
        #expect(throws: NetError.self) { try UDPSocket.bind(to: try SocketAddress(unixDomainSocketPath: "/tmp/x"), on: driver.loop) }
        var options = UDPOptions()
        options.receiveBatchSize = 0
        #expect(throws: NetError.invalidAddress("UDP options: receiveBatchSize must be in 1...1024, got 0")) {
            try UDPSocket.bind(host: "127.0.0.1", port: 0, on: driver.loop, options: options)
        }
        first.close()
    }

    @Test("A connected socket hears of a closed port (ICMP port unreachable) as connectionRefused")
    func connectedSocketReportsARefusal() throws {
        let driver = try LoopDriver()
        let gone = try UDPSocket.bind(host: "127.0.0.1", port: 0, on: driver.loop)
        let address = gone.localAddress
        gone.close()
        let socket = try UDPSocket.bind(host: "127.0.0.1", port: 0, on: driver.loop)
        try socket.connect(to: address)
        #expect(socket.remoteAddress == address)
        var errors: [UDPError] = []
        socket.onError { errors.append($0) }
        socket.onDatagrams { _ in }
        try socket.write(Bytes("anyone?"))
        _ = try driver.step()
        #expect(errors == [.connectionRefused])
        try socket.disconnect()
        #expect(socket.remoteAddress == nil)
        socket.close()
    }

    @Test("R14: onDatagrams runs in phase 2 (work it queues runs in the same iteration's drain); its writes leave when it returns; an async consumer goes on in that drain")
    func datagramsAreDeliveredInPhaseTwo() throws {
        let driver = try LoopDriver()
        let loop = driver.loop
        let trace = OrderTrace(loop)
        let server = try UDPSocket.bind(host: "127.0.0.1", port: 0, on: loop)
        let client = try UDPSocket.bind(host: "127.0.0.1", port: 0, on: loop)
        server.onDatagrams { batch in
            trace.record("server: \(batch.count)")
            for datagram in batch { try! server.write(copying: datagram.payload, toSenderOf: datagram) }
            #expect(server.datagramsSent == 0)  // batched: sent when the handler returns
            try! loop.enqueue { trace.record("queued by the handler") }
        }
        Task(executorPreference: loop) {
            for try await datagram in client.datagrams {
                trace.record("client task: \(datagram.payload.count)")
                break
            }
        }
        _ = try driver.step()  // 1: the task starts, asks for a datagram and suspends
        try client.write(Bytes("ping"), to: server.localAddress)
        _ = try driver.step()  // 2: the server's handler (phase 2), the work it queued (phase 3)
        #expect(server.datagramsSent == 1)
        _ = try driver.step()  // 3: the client's read watch (phase 2) resumes the task, which runs in the drain
        #expect(trace.description == "2:server: 1 2:queued by the handler 3:client task: 4")
        server.close()
        client.close()
    }

    @Test("Calling a socket off its loop's thread stops the process")
    func offTheLoopThreadTraps() async {
        await #expect(processExitsWith: .failure) {
            let loop = try! EventLoop()
            let socket = try! UDPSocket.bind(host: "127.0.0.1", port: 0, on: loop)
            let done = DispatchSemaphore(value: 0)
            Thread {
                _ = socket.isClosed
                done.signal()
            }.start()
            done.wait()
        }
    }

    @Test("A second datagrams consumer while one waits stops the process")
    func aSecondDatagramsConsumerTraps() async throws {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let driver = try! LoopDriver()
            let socket = try! UDPSocket.bind(host: "127.0.0.1", port: 0, on: driver.loop)
            for _ in 0..<2 { Task(executorPreference: driver.loop) { for try await _ in socket.datagrams {} } }
            _ = try! driver.step(2)
        }
        let message = String(decoding: try #require(result).standardErrorContent, as: UTF8.self)
        #expect(message.contains("UDPSocket.datagrams has one consumer at a time"))
    }
}
