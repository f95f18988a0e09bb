#if canImport(Glibc)
import Glibc
#endif
import LoopKit
import LoopKitNet
import Testing
@testable import LoopKitHTTP

/// Where a server listens: a port in use is an error (never a second server sharing it), IPv6 works.
@Suite("Listening: ports and addresses")
struct ListeningTests {
    @Test func aSecondServerOnAPortInUseFailsToStartWithTheTypedError() async throws {
        try await withServer { _, port in
            let group = try LoopGroup(threads: 1)
            defer { group.shutdown() }
            let second = HTTPServer(group: group, configuration: .init(port: port), router: testRouter(), logger: quietLogger)
            #expect(throws: HTTPServerError.cannotListen(.addressInUse(try SocketAddress(ipAddress: "127.0.0.1", port: port)))) {
                try second.start()
            }
        }
    }

    @Test func aServerListensOnIPv6() async throws {
        let group = try LoopGroup(threads: 1)
        let server = HTTPServer(group: group, configuration: .init(host: "::1"), router: testRouter(), logger: quietLogger)
        let port = try server.start()
        let fd = socket(AF_INET6, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in6()
        address.sin6_family = sa_family_t(AF_INET6)
        address.sin6_port = in_port_t(UInt16(port).bigEndian)
        address.sin6_addr = in6addr_loopback
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) }
        }
        #expect(connected == 0)
        let request = Array("GET /hello HTTP/1.1\r\nHost: [::1]\r\nConnection: close\r\n\r\n".utf8)
        _ = request.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, 0) }
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count <= 0 { break }
            received += chunk[..<count]
        }
        Glibc.close(fd)
        #expect(String(decoding: received, as: UTF8.self).hasSuffix("Hello, World!"))
        await server.shutdown()
        group.shutdown()
    }
}
