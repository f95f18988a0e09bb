import HTTPTypes
import Testing
@testable import LoopKitHTTP

/// Methods and request targets as RFC 9110 and 9112 say: 405 with Allow, OPTIONS, 501, every common
/// method in the router, absolute-form targets, Host values that are not authorities.
@Suite("Methods and targets")
struct MethodsAndTargetsTests {
    func router() -> HTTPRouter {
        var router = testRouter()
        router.put("/items/:id") { request in .text("put \(request.parameters["id"] ?? "?")") }
        router.patch("/items/:id") { _ in .text("patched") }
        router.delete("/items/:id") { _ in .text("deleted") }
        router.on(.options, "/custom") { _ in .text("my options") }
        return router
    }

    @Test func aPathThatExistsWithAnotherMethodGets405WithAllow() async throws {
        try await withServer(router: router()) { _, port in
            let client = try RawClient(port: port)
            let response = try client.exchange("DELETE /hello HTTP/1.1\r\nHost: t\r\n\r\n")
            #expect(response.status == 405)
            #expect(response.field("Allow") == "GET, HEAD, OPTIONS")
            #expect(try client.exchange("GET /hello HTTP/1.1\r\nHost: t\r\n\r\n").status == 200)  // kept alive
        }
    }

    @Test func optionsAnswersWithAllowUnlessARouteDoes() async throws {
        try await withServer(router: router()) { _, port in
            let client = try RawClient(port: port)
            let items = try client.exchange("OPTIONS /items/7 HTTP/1.1\r\nHost: t\r\n\r\n")
            #expect(items.status == 204)
            #expect(items.field("Allow") == "PUT, PATCH, DELETE, OPTIONS")
            let star = try client.exchange("OPTIONS * HTTP/1.1\r\nHost: t\r\n\r\n")
            #expect(star.status == 204)
            #expect(star.field("Allow")?.contains("POST") == true)
            #expect(try client.exchange("OPTIONS /custom HTTP/1.1\r\nHost: t\r\n\r\n").text == "my options")
            #expect(try client.exchange("OPTIONS /nowhere HTTP/1.1\r\nHost: t\r\n\r\n").status == 404)
        }
    }

    @Test func anUnknownMethodGets501AndAKnownOneOnAnUnknownPath404() async throws {
        try await withServer(router: router()) { _, port in
            let client = try RawClient(port: port)
            #expect(try client.exchange("BREW /coffee HTTP/1.1\r\nHost: t\r\n\r\n").status == 501)
            #expect(try client.exchange("GET /nowhere HTTP/1.1\r\nHost: t\r\n\r\n").status == 404)
        }
    }

    @Test func putPatchAndDeleteRoutesAnswer() async throws {
        try await withServer(router: router()) { _, port in
            let client = try RawClient(port: port)
            #expect(try client.exchange("PUT /items/3 HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n").text == "put 3")
            #expect(try client.exchange("PATCH /items/3 HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n").text == "patched")
            #expect(try client.exchange("DELETE /items/3 HTTP/1.1\r\nHost: t\r\n\r\n").text == "deleted")
        }
    }

    @Test func anAbsoluteFormTargetIsRoutedByItsPath() async throws {
        try await withServer { _, port in
            let client = try RawClient(port: port)
            let response = try client.exchange("GET http://example.com:8080/hello HTTP/1.1\r\nHost: other\r\n\r\n")
            #expect(response.status == 200)
            #expect(response.text == "Hello, World!")
            #expect(try client.exchange("GET http://example.com?x=1 HTTP/1.1\r\nHost: t\r\n\r\n").status == 404)  // path "/"
        }
    }

    @Test func aHostThatIsNotAnAuthorityGets400AndTheConnectionCloses() async throws {
        try await withServer { _, port in
            for host in ["bad host", "a/b", "x@y", "h:port", "[::1"] {
                let client = try RawClient(port: port)
                #expect(try client.exchange("GET /hello HTTP/1.1\r\nHost: \(host)\r\n\r\n").status == 400, "Host: \(host)")
                #expect(client.isClosedByServer())
            }
            for host in ["localhost", "example.com:8080", "127.0.0.1", "[::1]:443", "a-b.c_d~e"] {
                let client = try RawClient(port: port)
                #expect(try client.exchange("GET /hello HTTP/1.1\r\nHost: \(host)\r\n\r\n").status == 200, "Host: \(host)")
            }
        }
    }

    @Test func authoritiesAreCheckedByteByByte() {
        let valid = ["", "localhost", "example.com:8080", "127.0.0.1", "[::1]", "[::1]:443", "[::1]:", "h:", "h:65535",
                     "a-b.c_d~e!$&'()*+,;=%41"]
        let invalid = ["bad host", "a/b", "x@y", "h:port", "h:123456", "[::1", "[]", "[::1]x", "[::g]", "[::1]:4x",
                       "ü.example", "a\tb"]
        for value in valid { #expect(HTTPRequestParser.isValidAuthority(value.utf8), "\(value)") }
        for value in invalid { #expect(!HTTPRequestParser.isValidAuthority(value.utf8), "\(value)") }
    }

    /// Found by QueryAuthorityFuzzer (Fuzz/Corpus/QueryAuthorityFuzzer/regression-authority-*): a `%` not
    /// followed by two hex digits, and brackets around what is not an IPv6 address, passed the check.
    @Test func anAuthorityHasWellFormedEscapesAndIPv6Literals() {
        let valid = ["ex%41mple.com", "%7e", "[::]", "[1:2:3:4:5:6:7:8]", "[1:2:3:4:5:6:7::]", "[::ffff:192.0.2.1]",
                     "[2001:db8::1]:443", "[1::2:3.4.5.6]"]
        let invalid = ["ex%zzmple.com", "a%4", "%", "a%", "%4g", "[1.2.3.4]", "[:::]", "[1::2::3]", "[1:2:3:4:5:6:7:8:9]",
                       "[1:2:3:4:5:6:7]", "[12345::]", "[::1.2.3.04]", "[::1.2.3.256]", "[1.2.3.4::]", "[:1::]",
                       "[fe80::1%25eth0]", "[v1.fe]"]
        for value in valid { #expect(HTTPRequestParser.isValidAuthority(value.utf8), "\(value)") }
        for value in invalid { #expect(!HTTPRequestParser.isValidAuthority(value.utf8), "\(value)") }
    }

    @Test func theParserSplitsAbsoluteFormAndTakesItsAuthority() throws {
        #expect(HTTPRequestParser.splitAbsoluteForm("http://h:1/a?b")! == ("http", "h:1", "/a?b"))
        #expect(HTTPRequestParser.splitAbsoluteForm("HTTPS://h")! == ("https", "h", "/"))
        #expect(HTTPRequestParser.splitAbsoluteForm("/plain") == nil)
        #expect(HTTPRequestParser.splitAbsoluteForm("*") == nil)
        #expect(HTTPRequestParser.splitAbsoluteForm("1a://h/") == nil)  // a scheme starts with a letter
        #expect(HTTPRequestParser.splitAbsoluteForm("h:80") == nil)  // authority form (CONNECT)
        #expect(HTTPRequestParser.splitAbsoluteForm("web+x://h?q")! == ("web+x", "h", "/?q"))
        #expect(HTTPRequestParser.splitAbsoluteForm("http://ü.example/ä")! == ("http", "ü.example", "/ä"))
        var parser = HTTPRequestParser()
        let bytes = Array("GET http://example.com/x HTTP/1.1\r\nHost: ignored\r\n\r\n".utf8)
        let (event, _) = try bytes.withUnsafeBytes { try parser.parse($0) }
        guard case .head(let head) = event else {
            Issue.record("no head: \(event)")
            return
        }
        #expect(head.request.path == "/x")
        #expect(head.request.authority == "example.com")
        #expect(head.request.scheme == "http")
    }
}
