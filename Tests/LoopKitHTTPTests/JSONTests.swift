import HTTPTypes
import LoopKitHTTP
import LoopKitHTTPTesting
import Testing

/// `.json(value)` answers with JSON; `request.decode(as:)` and `body.decode(as:upTo:)` answer 400 for a
/// body that does not decode and 413 past the limit, without a line of the handler's.
/// Responses with more fields: `.json`, `.text` and `.bytes` take `headerFields:` (a `Location` on a 201), and
/// a `Content-Type` among them replaces the default one (issue 47).
@Suite("Responses with header fields")
struct ResponseFieldsTests {
    struct Todo: Codable, Equatable { var id: Int; var title: String }

    @Test("json(_:status:headerFields:) keeps the JSON content type and adds the fields")
    func jsonWithLocation() throws {
        let response = try HTTPServerResponse.json(Todo(id: 7, title: "t"), status: .created, headerFields: [.location: "/todos/7"])
        #expect(response.head.status == .created)
        #expect(response.head.headerFields[.location] == "/todos/7")
        #expect(response.head.headerFields[.contentType] == "application/json; charset=utf-8")
    }

    @Test("text and bytes take fields; a Content-Type among them replaces the default, once")
    func textAndBytesWithFields() {
        let html = HTTPServerResponse.text("<p>", headerFields: [.contentType: "text/html", .cacheControl: "no-store"])
        #expect(html.head.headerFields[values: .contentType] == ["text/html"])
        #expect(html.head.headerFields[.cacheControl] == "no-store")
        #expect(HTTPServerResponse.text("x").head.headerFields[.contentType] == "text/plain; charset=utf-8")
        let png = HTTPServerResponse.bytes(Bytes([1, 2]), contentType: "image/png", headerFields: [.eTag: "\"a\""])
        #expect(png.head.headerFields[.contentType] == "image/png")
        #expect(png.head.headerFields[.eTag] == "\"a\"")
    }
}

@Suite("JSON requests and responses")
struct JSONTests {
    struct NewTodo: Codable, Equatable { var title: String; var done = false }
    struct Todo: Codable, Equatable { var id: Int; var title: String; var done: Bool }
    struct Batch: Codable { var items: [NewTodo] }

    static func router() -> HTTPRouter {
        var router = HTTPRouter()
        router.post("/todos") { request in
            let new = try request.decode(as: NewTodo.self)
            return try .json(Todo(id: 1, title: new.title, done: new.done), status: .created)
        }
        router.post("/batches") { request in
            try .json(["count": request.decode(as: Batch.self).items.count])
        }
        router.on(.post, "/imports", bodyLimit: nil) { _, body in
            try .json(["count": await body.decode(as: [NewTodo].self, upTo: 64).count])
        }
        router.get("/nan") { _ in try .json(["x": Double.nan]) }
        return router
    }

    func post(_ path: String, _ body: String, mode: HTTPTestMode,
              configuration: HTTPServer.Configuration = .init()) throws -> HTTPTestResponse {
        let client = try HTTPTestClient(router: Self.router(), configuration: configuration, mode: mode)
        return try client.execute(.post, path, body: Bytes(body))
    }

    @Test(arguments: HTTPTestMode.allCases)
    func aJSONResponseHasItsStatusContentTypeAndBody(mode: HTTPTestMode) throws {
        let client = try HTTPTestClient(router: Self.router(), mode: mode)
        let response = try client.execute(.post, "/todos", json: NewTodo(title: "milk"))
        #expect(response.status == .created)
        #expect(response.headerFields[.contentType] == "application/json; charset=utf-8")
        #expect(try response.decode(as: Todo.self) == Todo(id: 1, title: "milk", done: false))
    }

    @Test(arguments: HTTPTestMode.allCases)
    func aBodyThatIsNotJSONIs400(mode: HTTPTestMode) throws {
        let response = try post("/todos", "{title: milk}", mode: mode)
        #expect(response.status == .badRequest)
        #expect(response.text.hasPrefix("invalid JSON body: not valid JSON"))
    }

    @Test(arguments: HTTPTestMode.allCases)
    func aMissingFieldIs400NamingIt(mode: HTTPTestMode) throws {
        let response = try post("/todos", #"{"done": true}"#, mode: mode)
        #expect(response.status == .badRequest)
        #expect(response.text == "invalid JSON body: missing field title")
    }

    @Test(arguments: HTTPTestMode.allCases)
    func aFieldOfTheWrongTypeIs400WithItsPath(mode: HTTPTestMode) throws {
        let response = try post("/batches", #"{"items": [{"title": "a", "done": true}, {"title": "b", "done": "yes"}]}"#, mode: mode)
        #expect(response.status == .badRequest)
        #expect(response.text == "invalid JSON body: items[1].done: expected true or false")
    }

    @Test(arguments: HTTPTestMode.allCases)
    func anEmptyBodyIs400(mode: HTTPTestMode) throws {
        let response = try post("/todos", "", mode: mode)
        #expect(response.status == .badRequest)
        #expect(response.text == "invalid JSON body: the body is empty")
    }

    @Test(arguments: HTTPTestMode.allCases)
    func aCollectedBodyPastTheServersLimitIs413WithoutTheHandler(mode: HTTPTestMode) throws {
        var configuration = HTTPServer.Configuration()
        configuration.maxBodySize = 16
        let response = try post("/todos", #"{"title": "a title longer than sixteen bytes"}"#, mode: mode,
                                configuration: configuration)
        #expect(response.status == .contentTooLarge)
    }

    @Test(arguments: HTTPTestMode.allCases)
    func aStreamedBodyDecodes(mode: HTTPTestMode) throws {
        let response = try post("/imports", #"[{"title": "a", "done": true}, {"title": "b", "done": false}]"#, mode: mode)
        #expect(response.status == .ok)
        #expect(try response.decode(as: [String: Int].self) == ["count": 2])
    }

    @Test(arguments: HTTPTestMode.allCases)
    func aStreamedBodyPastTheDecodeLimitIs413WithAMessage(mode: HTTPTestMode) throws {
        let response = try post("/imports", "[" + Array(repeating: #"{"title": "a"}"#, count: 10).joined(separator: ",") + "]",
                                mode: mode)
        #expect(response.status == .contentTooLarge)
        #expect(response.text == "the request body is larger than 64 bytes")
    }

    @Test(arguments: HTTPTestMode.allCases)
    func aValueJSONCannotHoldIs500(mode: HTTPTestMode) throws {
        let client = try HTTPTestClient(router: Self.router(), mode: mode)
        #expect(try client.execute(.get, "/nan").status == .internalServerError)
    }
}
