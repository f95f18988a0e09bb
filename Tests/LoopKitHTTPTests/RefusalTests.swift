import HTTPTypes
import Logging
import LoopKitHTTPTesting
import Testing
@testable import LoopKitHTTP

/// A request the server refuses itself (the parser's 400/413/431, a declared `Content-Length` past the
/// limit) is answered as any other: a body, the request id, an access line, the middleware's
/// `responseEnded`; it is logged at `debug`, never `error`; its response is configurable.
@Suite("Refused requests")
struct RefusalTests {
    static func router() -> HTTPRouter {
        var router = HTTPRouter()
        router.post("/todos") { _ in .text("created", status: .created) }
        return router
    }

    static var smallBodies: HTTPServer.Configuration {
        var configuration = HTTPServer.Configuration()
        configuration.maxBodySize = 16
        return configuration
    }

    static let tooLarge = "POST /todos HTTP/1.1\r\nHost: t\r\nX-Request-ID: r-1\r\nContent-Length: 100\r\n\r\n"

    @Test(arguments: HTTPTestMode.allCases)
    func aDeclaredContentLengthPastTheLimitIs413WithABodyAndTheRequestID(mode: HTTPTestMode) throws {
        let client = try HTTPTestClient(router: Self.router(), configuration: Self.smallBodies, mode: mode)
        try client.send(Self.tooLarge)
        let response = try client.nextResponse()
        #expect(response.status == .contentTooLarge)
        #expect(response.text == "Content Too Large")
        #expect(response.headerFields[.contentType] == "text/plain; charset=utf-8")
        #expect(response.headerFields[.requestID] == "r-1")
        #expect(response.headerFields[.connection] == "close")
        #expect(try client.readUntilClosed().isEmpty)
    }

    @Test func aParserRefusalHasABodyAndAMadeRequestID() throws {
        let client = try HTTPTestClient(router: Self.router())
        try client.send("GET /todos HTTP/1.1\r\nHost: t\r\nContent-Length: x\r\n\r\n")
        let response = try client.nextResponse()
        #expect(response.status == .badRequest)
        #expect(response.text == "Bad Request")
        #expect(response.headerFields[.requestID] == "memory-1")
        #expect(try client.readUntilClosed().isEmpty)
    }

    @Test(arguments: HTTPTestMode.allCases)
    func aRefusalGoesThroughTheAccessLogMiddleware(mode: HTTPTestMode) throws {
        let records = Recorder<RecordingLogHandler.Record>()
        var configuration = Self.smallBodies
        configuration.logsAccess = false
        var router = Self.router()
        router.use(AccessLogMiddleware())
        let client = try HTTPTestClient(router: router, configuration: configuration, mode: mode, logger: recordingLogger(records))
        try client.send(Self.tooLarge)
        #expect(try client.nextResponse().status == .contentTooLarge)
        _ = try client.readUntilClosed()
        try client.runUntilIdle()
        let lines = records.all.filter { $0.level == .info && $0.message.hasPrefix("POST") }
        #expect(lines.map(\.message) == ["POST /todos 413"])
        #expect(lines.first?.metadata["request.id"] == "r-1")
    }

    @Test func theBuiltInAccessLogHasALineForEveryRefusal() throws {
        let records = Recorder<RecordingLogHandler.Record>()
        let client = try HTTPTestClient(router: Self.router(), configuration: Self.smallBodies, logger: recordingLogger(records))
        try client.send(Self.tooLarge)
        _ = try client.readUntilClosed()
        let garbled = try HTTPTestClient(router: Self.router(), logger: recordingLogger(records))
        try garbled.send("GET / HTTP/1.1\r\nHost: t\r\nBad Field: x\r\n\r\n")
        _ = try garbled.readUntilClosed()
        #expect(records.all.filter { $0.level == .info }.map(\.message) == ["POST /todos 413", "- - 400"])
    }

    @Test(arguments: ["GET / HTTP/1.1\r\nHost: t\r\nContent-Length: x\r\n\r\n",
                      "GET / HTTP/1.1\r\nHost: t\r\n" + String(repeating: "X-Filler: 0123456789\r\n", count: 200) + "\r\n",
                      tooLarge])
    func aRefusalIsLoggedAtDebugNeverError(bytes: String) throws {
        let records = Recorder<RecordingLogHandler.Record>()
        let client = try HTTPTestClient(router: Self.router(), configuration: Self.smallBodies, logger: recordingLogger(records))
        try client.send(bytes)
        #expect(try client.nextResponse().status.code >= 400)
        #expect(!records.all.contains { $0.level >= .warning })
        #expect(records.all.contains { $0.level == .debug && $0.message == "refused request" })
    }

    /// The deprecated hook, kept working (it wins over `errorRenderer` for refusals when set).
    @available(*, deprecated, message: "tests the deprecated refusalResponse")
    static func withRefusalResponse(_ configuration: HTTPServer.Configuration) -> HTTPServer.Configuration {
        var configuration = configuration
        configuration.errorRenderer = .plainText
        configuration.refusalResponse = { status, error in
            (try? .json(["error": error.map { "\($0)" } ?? "timeout"], status: .ok)) ?? .text("?")
        }
        return configuration
    }

    @available(*, deprecated, message: "tests the deprecated refusalResponse")
    @Test(arguments: HTTPTestMode.allCases)
    func theDeprecatedRefusalResponseStillAnswersAndKeepsItsStatus(mode: HTTPTestMode) throws {
        let configuration = Self.withRefusalResponse(Self.smallBodies)
        let client = try HTTPTestClient(router: Self.router(), configuration: configuration, mode: mode)
        try client.send(Self.tooLarge)
        let response = try client.nextResponse()
        #expect(response.status == .contentTooLarge)
        #expect(response.headerFields[.contentType] == "application/json; charset=utf-8")
        #expect(try response.decode(as: [String: String].self) == ["error": "body larger than the limit"])
    }
}
