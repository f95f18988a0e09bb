import HTTPTypes
import Logging
import LoopKitHTTPTesting
import Testing
@testable import LoopKitHTTP

@Suite("Request logger")
struct RequestLoggerTests {
    @Test(arguments: HTTPTestMode.allCases)
    func theRequestsLoggerCarriesItsID(mode: HTTPTestMode) throws {
        let records = Recorder<RecordingLogHandler.Record>()
        var router = HTTPRouter()
        router.get("/") { request in
            request.logger.info("handling")
            return .text("ok")
        }
        let client = try HTTPTestClient(router: router, mode: mode, logger: recordingLogger(records))
        defer { client.shutDown() }
        _ = try client.execute(.get, "/", headerFields: [.requestID: "req-42"])
        let handling = records.all.filter { $0.message == "handling" }
        #expect(handling.count == 1)
        #expect(handling.first?.metadata["request.id"] == "req-42")
    }

    @Test func metadataAMiddlewareAddsReachesTheHandler() throws {
        let records = Recorder<RecordingLogHandler.Record>()
        var router = HTTPRouter()
        router.use(before: { request in
            request.logger[metadataKey: "user"] = "ada"
            return nil
        })
        router.get("/") { request in
            request.logger.info("handling")
            return .text("ok")
        }
        let client = try HTTPTestClient(router: router, logger: recordingLogger(records))
        defer { client.shutDown() }
        let response = try client.execute(.get, "/")
        let handling = try #require(records.all.first { $0.message == "handling" })
        #expect(handling.metadata["user"] == "ada")
        #expect(handling.metadata["request.id"] == .string(response.headerFields[.requestID] ?? "?"))
    }
}
