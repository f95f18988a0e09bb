import LoopKitHTTP  // alone: this file must not import HTTPTypes
import Testing

/// `import LoopKitHTTP` brings swift-http-types' currency types with it.
@Suite("Re-exported types")
struct ReexportTests {
    @Test func httpTypesAreNamedWithLoopKitHTTPAlone() {
        let response = HTTPResponse(status: .ok)
        var fields = HTTPFields()
        fields[.contentType] = "text/plain"
        let request = HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/")
        #expect(response.status.code == 200)
        #expect(fields[.contentType] == "text/plain")
        #expect(request.method == .get)
    }
}
