import HTTPTypes
import Logging
import LoopKitHTTPTesting
import Synchronization
import Testing
@testable import LoopKitHTTP

/// The access log written into a sink as bytes (``HTTPAccessLogSink``) instead of through the logger.
@Suite("Access log sink")
struct AccessLogSinkTests {
    /// Keeps every line it is lent, as a string.
    final class Lines: HTTPAccessLogSink {
        private let lines = Mutex<[String]>([])
        var all: [String] { lines.withLock { $0 } }

        func appendAccessLine(_ line: UnsafeRawBufferPointer) {
            let text = String(decoding: line, as: UTF8.self)
            lines.withLock { $0.append(text) }
        }
    }

    @Test(arguments: HTTPTestMode.allCases)
    func theSinkGetsTheLineTheLoggerWouldAndTheLoggerGetsNone(mode: HTTPTestMode) throws {
        let records = Recorder<RecordingLogHandler.Record>()
        let lines = Lines()
        var configuration = HTTPServer.Configuration()
        configuration.accessLogSink = lines
        var router = HTTPRouter()
        router.get("/hello") { _ in .text("hi") }
        let client = try HTTPTestClient(router: router, configuration: configuration, mode: mode, logger: recordingLogger(records))
        defer { client.shutDown() }
        _ = try client.execute(.get, "/hello?x=1")
        _ = try client.execute(.delete, "/a/path/longer/than/a/small/string?and=a%20query")
        #expect(lines.all == ["GET /hello?x=1 200", "DELETE /a/path/longer/than/a/small/string?and=a%20query 404"])
        #expect(!records.all.contains { $0.level == .info && $0.message.hasPrefix("GET") })
    }

    @Test func aRequestRefusedBeforeItsHeadIsADashLine() throws {
        let lines = Lines()
        var configuration = HTTPServer.Configuration()
        configuration.accessLogSink = lines
        let client = try HTTPTestClient(router: HTTPRouter(), configuration: configuration)
        defer { client.shutDown() }
        try client.send("GET / HTTP/1.1\r\nHost: t\r\nBad Field: x\r\n\r\n")
        _ = try client.readUntilClosed()
        #expect(lines.all == ["- - 400"])
    }

    @Test func theSinkWritesWhateverTheLoggersLevelAndNothingWhenTheLogIsOff() throws {
        let lines = Lines()
        var configuration = HTTPServer.Configuration()
        configuration.accessLogSink = lines
        var logger = Logger(label: "quiet")
        logger.logLevel = .error
        let client = try HTTPTestClient(router: HTTPRouter(), configuration: configuration, logger: logger)
        _ = try client.execute(.get, "/missing")
        client.shutDown()
        #expect(lines.all == ["GET /missing 404"])

        configuration.logsAccess = false
        let silent = Lines()
        configuration.accessLogSink = silent
        let off = try HTTPTestClient(router: HTTPRouter(), configuration: configuration)
        _ = try off.execute(.get, "/missing")
        off.shutDown()
        #expect(silent.all.isEmpty)
    }
}

/// A request's identity lives with its head: a middleware that replaces the head keeps it.
@Suite("Request identity across a replaced head")
struct RequestIdentityTests {
    @Test(arguments: HTTPTestMode.everyProtocol)
    func aReplacedHeadKeepsTheRequestsIDStartAndRouteAndTheEchoedID(mode: HTTPTestMode) throws {
        let seen = Mutex<[String]>([])
        var router = HTTPRouter()
        router.use(before: { request in
            let id = request.id, start = request.startTime
            var head = request.head
            head.headerFields[.userAgent] = "replaced"
            request.head = head
            #expect(request.id == id && request.startTime == start)
            return nil
        })
        router.get("/items/:id") { request in
            seen.withLock { $0.append("\(request.id) \(request.route ?? "-") \(request.head.headerFields[.userAgent] ?? "-")") }
            return .text("ok")
        }
        let client = try HTTPTestClient(router: router, mode: mode)
        defer { client.shutDown() }
        let given = try client.execute(.get, "/items/7", headerFields: [HTTPFieldName.requestID: "client-id-1"])
        let made = try client.execute(.get, "/items/8")
        #expect(given.headerFields[HTTPFieldName.requestID] == "client-id-1")
        let madeID = try #require(made.headerFields[HTTPFieldName.requestID])
        #expect(seen.withLock { $0 } == ["client-id-1 /items/:id replaced", "\(madeID) /items/:id replaced"])
    }
}
