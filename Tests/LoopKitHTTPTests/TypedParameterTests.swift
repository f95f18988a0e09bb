import HTTPTypes
import LoopKitHTTP
import LoopKitHTTPTesting
import Testing

/// `parameters.require("id", as: Int.self)`, `query(_:as:)` and `require(query:as:)` convert, percent-decode
/// and answer 400 with a message by themselves.
@Suite("Typed path and query parameters")
struct TypedParameterTests {
    enum Order: String, CaseIterable, HTTPParameterValue { case asc, desc }

    static func router() -> HTTPRouter {
        var router = HTTPRouter()
        router.get("/todos/:id") { request in
            .text("todo \(try request.parameters.require("id", as: Int.self))")
        }
        router.get("/files/:name") { request in
            .text(try request.parameters.require("name"))
        }
        router.get("/typo/:id") { request in
            .text("\(try request.parameters.require("identifier", as: Int.self))")
        }
        router.get("/search") { request in
            let term = try request.require(query: "q")
            let limit = try request.query("limit", as: Int.self) ?? 20
            let order = try request.query("order", as: Order.self) ?? .asc
            return .text("\(term)|\(limit)|\(order)|\(request.queryValues("tag").joined(separator: ","))")
        }
        return router
    }

    func get(_ path: String, mode: HTTPTestMode) throws -> HTTPTestResponse {
        try HTTPTestClient(router: Self.router(), mode: mode).execute(.get, path)
    }

    @Test(arguments: HTTPTestMode.allCases)
    func anIntegerPathParameterConverts(mode: HTTPTestMode) throws {
        #expect(try get("/todos/42", mode: mode).text == "todo 42")
    }

    @Test(arguments: HTTPTestMode.allCases)
    func aPathParameterThatIsNotAnIntegerIs400(mode: HTTPTestMode) throws {
        let response = try get("/todos/x", mode: mode)
        #expect(response.status == .badRequest)
        #expect(response.text == "parameter id: expected an integer")
    }

    @Test(arguments: HTTPTestMode.allCases)
    func aPathParameterIsPercentDecoded(mode: HTTPTestMode) throws {
        #expect(try get("/files/caf%C3%A9%20au+lait", mode: mode).text == "café au+lait")
    }

    @Test(arguments: HTTPTestMode.allCases)
    func aParameterTheRouteDoesNotHaveIs500(mode: HTTPTestMode) throws {
        let response = try get("/typo/1", mode: mode)
        #expect(response.status == .internalServerError)
        #expect(response.text == "the route has no parameter identifier")
    }

    @Test(arguments: HTTPTestMode.allCases)
    func queryParametersConvertWithTheirDefaults(mode: HTTPTestMode) throws {
        #expect(try get("/search?q=milk", mode: mode).text == "milk|20|asc|")
        #expect(try get("/search?limit=5&q=milk&order=desc&tag=a&tag=b", mode: mode).text == "milk|5|desc|a,b")
    }

    @Test(arguments: HTTPTestMode.allCases)
    func aQueryIsPercentDecodedWithPlusAsSpace(mode: HTTPTestMode) throws {
        #expect(try get("/search?q=caf%C3%A9+au%20lait&%74ag=x%2By", mode: mode).text == "café au lait|20|asc|x+y")
    }

    @Test(arguments: HTTPTestMode.allCases)
    func aBadPercentSequenceIsKeptAsABrowserKeepsIt(mode: HTTPTestMode) throws {
        #expect(try get("/search?q=100%&tag=%zz", mode: mode).text == "100%|20|asc|%zz")
    }

    @Test(arguments: HTTPTestMode.allCases)
    func aMissingRequiredQueryParameterIs400(mode: HTTPTestMode) throws {
        let response = try get("/search?limit=5", mode: mode)
        #expect(response.status == .badRequest)
        #expect(response.text == "query parameter q: missing")
    }

    @Test(arguments: HTTPTestMode.allCases)
    func aQueryParameterThatDoesNotConvertIs400(mode: HTTPTestMode) throws {
        let limit = try get("/search?q=a&limit=ten", mode: mode)
        #expect(limit.status == .badRequest)
        #expect(limit.text == "query parameter limit: expected an integer")
        #expect(try get("/search?q=a&order=up", mode: mode).text == "query parameter order: expected one of asc, desc")
    }

    @Test func theRawQueryFormIsUnchanged() throws {
        var router = HTTPRouter()
        router.get("/raw") { request in .text(String(request.query("q") ?? "none")) }
        let client = try HTTPTestClient(router: router)
        #expect(try client.execute(.get, "/raw?q=a+b%20c").text == "a+b%20c")
        #expect(try client.execute(.get, "/raw").text == "none")
    }
}

/// Importing LoopKitHTTP leaves the standard library's initialisers unambiguous: a conversion requirement
/// shaped like `init?(_:)` made `Int.init` ambiguous in every module that imports it.
@Suite("Parameter conversion and the standard library")
struct ParameterConversionSourceCompatibilityTests {
    @Test func intInitStaysUnambiguousWhereLoopKitHTTPIsImported() {
        #expect(["1", "x", "3"].compactMap(Int.init) == [1, 3])
        #expect(Optional("2.5").flatMap(Double.init) == 2.5)
    }
}
