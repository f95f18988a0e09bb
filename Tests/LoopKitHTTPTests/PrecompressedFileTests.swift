import HTTPTypes
import LoopKitHTTP
import LoopKitHTTPTesting
import Testing

@Suite("Files: precompressed variants and Accept-Encoding")
struct PrecompressedFileTests {
    static func setUp(_ fixture: FileFixture) throws {
        try fixture.write("app.js", "plain")
        try fixture.write("app.js.gz", "gzipped")
        try fixture.write("app.js.br", "brotli")
    }

    @Test func theBestAcceptedVariantIsSentWithItsCoding() throws {
        try withFiles(Self.setUp) { client, _ throws in
            let response = try client.get("/static/app.js", [.acceptEncoding: "gzip, deflate, br"])
            #expect(response.text == "brotli")
            #expect(response.headerFields[.contentEncoding] == "br")
            #expect(response.headerFields[.contentType] == "text/javascript; charset=utf-8")
            #expect(response.headerFields[.vary] == "Accept-Encoding")
        }
    }

    @Test func qValuesChooseTheVariant() throws {
        try withFiles(Self.setUp) { client, _ throws in
            let response1 = try client.get("/static/app.js", [.acceptEncoding: "br;q=0.5, gzip;q=0.9"])
            #expect(response1.text == "gzipped")
            let response2 = try client.get("/static/app.js", [.acceptEncoding: "br;q=0, gzip"])
            #expect(response2.text == "gzipped")
        }
    }

    @Test func aMissingVariantFallsBackToTheNextOrTheFile() throws {
        try withFiles(Self.setUp) { client, _ throws in
            let response3 = try client.get("/static/app.js", [.acceptEncoding: "zstd, gzip;q=0.1"])
            #expect(response3.text == "gzipped")
            let plain = try client.get("/static/app.js", [.acceptEncoding: "zstd"])
            #expect(plain.text == "plain")
            #expect(plain.headerFields[.contentEncoding] == nil)
            #expect(plain.headerFields[.vary] == "Accept-Encoding")
        }
    }

    @Test func noAcceptEncodingGetsTheFile() throws {
        try withFiles(Self.setUp) { client, _ throws in
            #expect(try client.get("/static/app.js").text == "plain")
        }
    }

    @Test func starAcceptsTheVariants() throws {
        try withFiles(Self.setUp) { client, _ throws in
            let response4 = try client.get("/static/app.js", [.acceptEncoding: "*"])
            #expect(response4.field(.contentEncoding) == "br")
        }
    }

    @Test func identityRefusedWithNoVariantIs406() throws {
        try withFiles({ try $0.write("only.txt", "x") }) { client, _ throws in
            let response5 = try client.get("/static/only.txt", [.acceptEncoding: "gzip, identity;q=0"])
            #expect(response5.status == .notAcceptable)
            let response6 = try client.get("/static/only.txt", [.acceptEncoding: "*;q=0"])
            #expect(response6.status == .notAcceptable)
        }
    }

    @Test func aVariantHasItsOwnETag() throws {
        try withFiles(Self.setUp) { client, _ throws in
            let plain = try client.get("/static/app.js").headerFields[.eTag]
            let brotli = try client.get("/static/app.js", [.acceptEncoding: "br"]).headerFields[.eTag]
            #expect(plain != nil && brotli != nil && plain != brotli)
            let response7 = try client.get("/static/app.js", [.acceptEncoding: "br", .ifNoneMatch: brotli!])
            #expect(response7.status == .notModified)
            let response8 = try client.get("/static/app.js", [.acceptEncoding: "gzip", .ifNoneMatch: brotli!])
            #expect(response8.status == .ok)
        }
    }

    @Test func noVariantsConfiguredSendsNoVary() throws {
        try withFiles(options: HTTPFileOptions(precompressed: []), Self.setUp) { client, _ throws in
            let response = try client.get("/static/app.js", [.acceptEncoding: "br"])
            #expect(response.text == "plain")
            #expect(response.headerFields[.vary] == nil)
        }
    }

    @Test func acceptEncodingNegotiatesByQuality() {
        #expect(HTTPAcceptEncoding("gzip;q=0.8, br").preferred(among: [.gzip, .brotli]) == .coding(.brotli))
        #expect(HTTPAcceptEncoding("x-gzip").preferred(among: [.gzip]) == .coding(.gzip))
        #expect(HTTPAcceptEncoding("gzip;q=0").preferred(among: [.gzip]) == .identity)
        #expect(HTTPAcceptEncoding("identity;q=0").preferred(among: []) == .notAcceptable)
        #expect(HTTPAcceptEncoding("br;q=2").preferred(among: [.brotli]) == .identity)  // a malformed q leaves the element out
        #expect(HTTPAcceptEncoding("").preferred(among: [.gzip]) == .identity)
        #expect(HTTPAcceptEncoding(nil).preferred(among: [.gzip]) == .identity)
        #expect(HTTPAcceptEncoding("identity;q=0.5, gzip;q=0.4").preferred(among: [.gzip]) == .identity)
    }
}
