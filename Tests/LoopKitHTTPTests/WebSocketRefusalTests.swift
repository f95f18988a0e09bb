import LoopKit
import LoopKitHTTPTesting
import Testing
@testable import LoopKitHTTP

/// A WebSocket upgrade refused before the `101` is answered by the server's error renderer, whichever way
/// it is refused: the route's `.refuse(status:)` or a thrown `HTTPError` (with or without middleware), or
/// the server's own 400 and 426 for a handshake that is not one. A `.refuse(response)` goes out as it is.
@Suite("WebSocket refusals")
struct WebSocketRefusalTests {
    /// `/private` refuses with `.refuse(status:)` without the right token, `/thrown` throws, `/custom`
    /// refuses with a response of its own.
    static func router(middleware: Bool = false) -> HTTPRouter {
        var router = HTTPRouter()
        if middleware { router.use(AccessLogMiddleware()) }
        router.webSocket("/private", .inTask, shouldUpgrade: { request in
            request.head.headerFields[.authorization] == "Bearer yes" ? .accept : .refuse(status: .unauthorized)
        }) { _, socket in try await socket.send(.text("welcome")) }
        router.webSocket("/thrown", .inTask, shouldUpgrade: { _ in throw HTTPError(.forbidden, "not on a Sunday") }) { _, _ in }
        router.webSocket("/custom", .inTask, shouldUpgrade: { _ in .refuse(.text("come back later", status: .serviceUnavailable)) }) { _, _ in }
        return router
    }

    static var json: HTTPServer.Configuration {
        var configuration = HTTPServer.Configuration()
        configuration.errorRenderer = .json
        return configuration
    }

    /// The answer to an upgrade of `path` that was refused.
    static func refusal(_ path: String, through client: HTTPTestClient) throws -> HTTPTestResponse {
        do {
            let socket = try client.webSocket(path)
            Issue.record("\(path) upgraded: \(socket.upgradeResponse.status)")
            return socket.upgradeResponse
        } catch WebSocketTestClientError.notUpgraded(let response) {
            return response
        }
    }

    @Test(arguments: HTTPTestMode.allCases)
    func refuseStatusIsRenderedByTheErrorRenderer(mode: HTTPTestMode) throws {
        let client = try HTTPTestClient(router: Self.router(), configuration: Self.json, mode: mode)
        let response = try Self.refusal("/private", through: client)
        #expect(response.status == .unauthorized)
        #expect(response.headerFields[.contentType] == "application/json; charset=utf-8")
        #expect(response.text == #"{"error":{"status":401,"message":"Unauthorized"}}"#)
        #expect(try client.execute(.get, "/nowhere").status == .notFound)  // the connection stayed HTTP
    }

    @Test func refuseStatusSaysItsReasonAsPlainTextByDefault() throws {
        let client = try HTTPTestClient(router: Self.router())
        #expect(try Self.refusal("/private", through: client).text == "Unauthorized")
    }

    @Test(arguments: [false, true])
    func aThrownHTTPErrorIsRenderedWithItsMessage(middleware: Bool) throws {
        let client = try HTTPTestClient(router: Self.router(middleware: middleware), configuration: Self.json)
        #expect(try Self.refusal("/thrown", through: client).text == #"{"error":{"status":403,"message":"not on a Sunday"}}"#)
    }

    @Test func refuseStatusBehindMiddlewareIsRenderedToo() throws {
        let client = try HTTPTestClient(router: Self.router(middleware: true), configuration: Self.json)
        #expect(try Self.refusal("/private", through: client).text == #"{"error":{"status":401,"message":"Unauthorized"}}"#)
    }

    @Test func anAcceptedUpgradeIsNotRendered() throws {
        let client = try HTTPTestClient(router: Self.router(), configuration: Self.json)
        let socket = try client.webSocket("/private", headerFields: [.authorization: "Bearer yes"])
        #expect(try socket.receive() == .text("welcome"))
    }

    @Test func aRefusalWithAResponseGoesOutAsItIs() throws {
        let client = try HTTPTestClient(router: Self.router(), configuration: Self.json)
        let response = try Self.refusal("/custom", through: client)
        #expect(response.status == .serviceUnavailable)
        #expect(response.text == "come back later")
    }

    @Test(arguments: [false, true])
    func theHandshakesOwnRefusalsAreRendered(middleware: Bool) throws {
        let client = try HTTPTestClient(router: Self.router(middleware: middleware), configuration: Self.json)
        let missingUpgrade = try client.execute(.get, "/private")
        #expect(missingUpgrade.status == .upgradeRequired)
        #expect(missingUpgrade.headerFields[HTTPField.Name("Sec-WebSocket-Version")!] == "13")
        #expect(missingUpgrade.headerFields[.upgrade] == "websocket")
        #expect(missingUpgrade.text
            == #"{"error":{"status":426,"message":"this resource speaks WebSocket only: send Upgrade: websocket"}}"#)
        let badKey = try client.execute(.get, "/private", headerFields: [
            .upgrade: "websocket", .connection: "Upgrade", HTTPField.Name("Sec-WebSocket-Version")!: "13",
            HTTPField.Name("Sec-WebSocket-Key")!: "short",
        ])
        #expect(badKey.text == #"{"error":{"status":400,"message":"Sec-WebSocket-Key must be 16 bytes in base64"}}"#)
    }
}
