import LoopKit
import Glibc
import LoopKitNet
import Testing

@Suite("Echo over TCP, IPv6 and Unix-domain sockets")
struct EchoTests {
    @Test func echoesOverIPv4WithCallbacks() async throws {
        let group = try LoopGroup(threads: 1)
        defer { group.shutdown() }
        let listener = try TCPListener.bind(host: "127.0.0.1", port: 0, on: group.loops[0], onAccept: echoByCallbacks)
        #expect(listener.localAddress.port != 0)
        let message = Array("hello, loop".utf8)
        let echoed = try await onLoop(group.loops[0]) {
            let client = try await Connection.connect(to: listener.localAddress, on: group.loops[0])
            try await client.send(Bytes(message))
            let answer = try await readBytes(message.count, from: client)
            client.close()
            return answer
        }
        #expect(echoed == message)
        await listener.shutdown()
    }

    @Test func echoesOverIPv4WithAnAsyncHandler() async throws {
        let group = try LoopGroup(threads: 1)
        defer { group.shutdown() }
        let listener = try TCPListener.bind(host: "127.0.0.1", port: 0, on: group.loops[0]) { connection in
            for try await chunk in connection.inbound { try await connection.send(chunk) }
        }
        let message = Array(repeating: UInt8(ascii: "x"), count: 300_000)
        let echoed = try await onLoop(group.loops[0]) {
            let client = try await Connection.connect(host: "127.0.0.1", port: listener.localAddress.port, on: group.loops[0])
            try await client.send(Bytes(message))
            let answer = try await readBytes(message.count, from: client)
            client.close()
            return answer
        }
        #expect(echoed == message)
        await listener.shutdown()
    }

    @Test func echoesOverIPv6() async throws {
        let group = try LoopGroup(threads: 1)
        defer { group.shutdown() }
        let listener = try TCPListener.bind(host: "::1", port: 0, on: group.loops[0], onAccept: echoByCallbacks)
        #expect(listener.localAddress.family == .ipv6)
        let echoed = try await onLoop(group.loops[0]) {
            let client = try await Connection.connect(to: listener.localAddress, on: group.loops[0])
            try await client.send("v6")
            let answer = try await readBytes(2, from: client)
            client.close()
            return answer
        }
        #expect(echoed == Array("v6".utf8))
        await listener.shutdown()
    }

    @Test func echoesOverAUnixDomainSocket() async throws {
        let group = try LoopGroup(threads: 1)
        defer { group.shutdown() }
        let path = "/tmp/loopkitnet-test-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).sock"
        let address = try SocketAddress(unixDomainSocketPath: path)
        let listener = try TCPListener.bind(to: address, on: group.loops[0], onAccept: echoByCallbacks)
        #expect(listener.localAddress == address)
        let echoed = try await onLoop(group.loops[0]) {
            let client = try await Connection.connect(to: address, on: group.loops[0])
            try await client.send("unix")
            let answer = try await readBytes(4, from: client)
            client.close()
            return answer
        }
        #expect(echoed == Array("unix".utf8))
        await listener.shutdown()
        #expect(access(path, F_OK) != 0)
    }

    @Test func resolvesAHostNameWithoutBlockingTheLoop() async throws {
        let group = try LoopGroup(threads: 1)
        defer { group.shutdown() }
        let listener = try TCPListener.bind(host: "127.0.0.1", port: 0, on: group.loops[0], onAccept: echoByCallbacks)
        let echoed = try await onLoop(group.loops[0]) {
            let client = try await Connection.connect(host: "localhost", port: listener.localAddress.port, on: group.loops[0])
            try await client.send("name")
            let answer = try await readBytes(4, from: client)
            client.close()
            return answer
        }
        #expect(echoed == Array("name".utf8))
        await listener.shutdown()
    }
}
