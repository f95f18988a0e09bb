import Glibc
import HTTPTypes
import LoopKit
import LoopKitHTTPClient
import LoopKitNet
import Synchronization
import Testing

@Suite("HTTPClient against a LoopKitHTTP server")
struct HTTPClientTests {
    @Test func getReturnsStatusFieldsAndBody() async throws {
        let server = try LiveServer()
        let loop = try ClientLoop()
        let response = try await loop.client().execute(server.request("/hello"))
        #expect(response.head.status == .ok)
        #expect(response.head.status.reasonPhrase == "OK")
        #expect(response.head.headerFields[.contentType] == "text/plain")
        #expect(response.httpVersion == 11)
        #expect(try await text(response) == "Hello, World!")
    }

    @Test func missingRouteIsAResponseNotAnError() async throws {
        let server = try LiveServer()
        let loop = try ClientLoop()
        let response = try await loop.client().execute(server.request("/nothing-here"))
        #expect(response.head.status == .notFound)
    }

    @Test func bytesBodyIsSentWithItsLength() async throws {
        let server = try LiveServer()
        let loop = try ClientLoop()
        let payload = Bytes((0..<300_000).map { UInt8($0 % 251) })
        let response = try await loop.client().execute(server.request("/echo", method: .post), body: .bytes(payload))
        #expect(response.head.status == .ok)
        #expect(try await response.collect(upTo: 1 << 20) == payload)
    }

    @Test func streamedBodyIsSentChunkByChunkWithItsMethod() async throws {
        let server = try LiveServer()
        let loop = try ClientLoop()
        let chunks = (0..<20).map { Bytes(String(repeating: "\($0 % 10)", count: 10_000)) }
        let stream = AsyncStream<Bytes> { continuation in
            for chunk in chunks { continuation.yield(chunk) }
            continuation.finish()
        }
        let response = try await loop.client().execute(server.request("/echo", method: .put), body: .stream(stream))
        #expect(response.head.status == .ok)
        #expect(try await response.collect(upTo: 1 << 20) == Bytes(joining: chunks))
    }

    @Test func callerFieldsAreSent() async throws {
        let server = try LiveServer()
        let loop = try ClientLoop()
        let response = try await loop.client().execute(server.request("/fields", fields: [HTTPField.Name("X-Probe")!: "42"]))
        #expect(try await text(response).lowercased().contains("x-probe=42"))
    }

    @Test func aTaskOnTheClientsLoopIsResumedOnIt() async throws {
        let server = try LiveServer()
        let loop = try ClientLoop()
        let client = loop.client()
        let request = server.request("/hello")
        let onLoop = try await Task(executorPreference: loop.loop) {
            let response = try await client.execute(request)
            _ = try await response.collect(upTo: 1024)
            return client.loop.isCurrent
        }.value
        #expect(onLoop)
    }

    @Test func callbackFormTellsTheHeadOnTheLoop() async throws {
        let server = try LiveServer()
        let loop = try ClientLoop()
        let client = loop.client()
        let request = server.request("/hello")
        let told = Mutex<(status: Int, onLoop: Bool)?>(nil)
        try loop.loop.invokeAndWait {
            _ = client.execute(request) { result in
                told.withLock { $0 = (try! result.get().head.status.code, client.loop.isCurrent) }
            }
        }
        try await eventually { told.withLock { $0 != nil } }
        #expect(told.withLock { $0?.status } == 200)
        #expect(told.withLock { $0?.onLoop } == true)
    }

    @Test func sixtyFourConcurrentRequestsAllComplete() async throws {
        let server = try LiveServer()
        let loop = try ClientLoop()
        let client = loop.client()
        let request = server.request("/hello")
        let bodies = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<64 { group.addTask { try await text(client.execute(request)) } }
            return try await group.reduce(into: [String]()) { $0.append($1) }
        }
        #expect(bodies.count == 64)
        #expect(bodies.allSatisfy { $0 == "Hello, World!" })
    }

    @Test func h2cByPriorKnowledgeSpeaksHTTP2() async throws {
        let server = try LiveServer()
        let loop = try ClientLoop()
        var configuration = HTTPClient.Configuration()
        configuration.httpVersion = .http2PriorKnowledge
        let response = try await loop.client(configuration).execute(server.request("/hello"))
        #expect(response.httpVersion == 20)
        #expect(try await text(response) == "Hello, World!")
    }

    @Test func requestWithoutAuthorityIsInvalid() async throws {
        let loop = try ClientLoop()
        let error = await #expect(throws: HTTPClientError.self) {
            try await loop.client().execute(HTTPRequest(method: .get, scheme: "http", authority: nil, path: "/"))
        }
        #expect(error?.kind == .invalidRequest)
    }

    @Test func refusedConnectIsConnectFailedWithCurlsText() async throws {
        // A port nothing listens on: bound, then closed.
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length); return getsockname(fd, $0, &length) }
        }
        let port = Int(UInt16(bigEndian: address.sin_port))
        close(fd)
        let loop = try ClientLoop()
        let error = await #expect(throws: HTTPClientError.self) {
            try await loop.client().execute(HTTPRequest(method: .get, scheme: "http", authority: "127.0.0.1:\(port)", path: "/"))
        }
        #expect(error?.kind == .connectFailed)
        #expect(error?.curlCode == 7)
        #expect(error?.message.contains("Couldn't connect to server") == true)
    }
}
