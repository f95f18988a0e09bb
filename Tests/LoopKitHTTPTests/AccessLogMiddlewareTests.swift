import HTTPTypes
import Logging
import LoopKitHTTPTesting
import Testing
@testable import LoopKitHTTP

@Suite("Access log middleware")
struct AccessLogMiddlewareTests {
    @Test func theBuiltInLogWritesOneLinePerResponseByDefault() throws {
        let records = Recorder<RecordingLogHandler.Record>()
        var router = HTTPRouter()
        router.get("/hello") { _ in .text("hi") }
        let client = try HTTPTestClient(router: router, logger: recordingLogger(records))
        defer { client.shutDown() }
        _ = try client.execute(.get, "/hello?x=1")
        _ = try client.execute(.delete, "/a/path/longer/than/a/small/string?and=a%20query")
        #expect(records.all.filter { $0.level == .info }.map(\.message)
            == ["GET /hello?x=1 200", "DELETE /a/path/longer/than/a/small/string?and=a%20query 404"])
    }

    @Test(arguments: HTTPTestMode.allCases)
    func theMiddlewareLogsTheSameLineWithIDBytesAndDuration(mode: HTTPTestMode) throws {
        let records = Recorder<RecordingLogHandler.Record>()
        var configuration = HTTPServer.Configuration()
        configuration.logsAccess = false
        var router = HTTPRouter()
        router.use(AccessLogMiddleware())
        router.use(before: { request in request.query("deny") != nil ? .text("no", status: .forbidden) : nil })
        router.get("/hello") { _ in .text("hi") }
        let client = try HTTPTestClient(router: router, configuration: configuration, mode: mode, logger: recordingLogger(records))
        defer { client.shutDown() }
        _ = try client.execute(.get, "/hello", headerFields: [.requestID: "r-1"])
        _ = try client.execute(.get, "/hello?deny")
        let lines = records.all.filter { $0.level == .info && $0.message.hasPrefix("GET") }  // live: "listening" too
        #expect(lines.map(\.message) == ["GET /hello 200", "GET /hello?deny 403"])
        #expect(lines.first?.metadata["request.id"] == "r-1")
        #expect(lines.first?.metadata["bytes"]?.description == "2")
        #expect(lines.first?.metadata["duration_us"] != nil)
    }
}
