import HTTPTypes
import LoopKitHTTP
import LoopKitHTTPTesting
import Testing

@Suite("Files: GET and HEAD of a directory's files")
struct FileServingTests {
    @Test(arguments: HTTPTestMode.allCases)
    func aFileIsSentWithItsTypeAndLength(mode: HTTPTestMode) throws {
        try withFiles(mode: mode, { try $0.write("css/site.css", "body { color: red }") }) { client, _ throws in
            let response = try client.get("/static/css/site.css")
            #expect(response.status == .ok)
            #expect(response.text == "body { color: red }")
            #expect(response.headerFields[.contentType] == "text/css; charset=utf-8")
            #expect(response.headerFields[.contentLength] == "19")
            #expect(response.headerFields[.acceptRanges] == "bytes")
            #expect(response.headerFields[.transferEncoding] == nil)
        }
    }

    @Test func aLargeFileStreamsWhole() throws {
        let bytes = (0..<(700 * 1024)).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        try withFiles({ try $0.write("big.bin", bytes) }) { client, _ throws in
            let response = try client.get("/static/big.bin")
            #expect(response.status == .ok)
            #expect(Array(response.body) == bytes)
            #expect(response.headerFields[.contentLength] == "\(bytes.count)")
        }
    }

    @Test func headSendsTheFieldsWithoutTheBody() throws {
        try withFiles({ try $0.write("a.txt", "hello") }) { client, _ throws in
            let head = try client.get("/static/a.txt", method: .head)
            #expect(head.status == .ok)
            #expect(head.headerFields[.contentLength] == "5")
            #expect(head.body.isEmpty)
            #expect(try client.get("/static/a.txt").text == "hello")  // the connection is still in step
        }
    }

    @Test func otherMethodsGet405WithAllow() throws {
        try withFiles({ try $0.write("a.txt", "hello") }) { client, _ throws in
            let response = try client.get("/static/a.txt", method: .post)
            #expect(response.status == .methodNotAllowed)
            #expect(response.headerFields[.allow] == "GET, HEAD, OPTIONS")
        }
    }

    @Test func anUnknownExtensionIsOctetStreamAndTheTableExtends() throws {
        var types = HTTPContentTypes.standard
        types["webmanifest"] = "application/manifest+json"
        try withFiles(options: HTTPFileOptions(contentTypes: types), {
            try $0.write("data.xyz", "x")
            try $0.write("app.WEBMANIFEST", "{}")
        }) { client, _ throws in
            #expect(try client.get("/static/data.xyz").field(.contentType) == "application/octet-stream")
            #expect(try client.get("/static/app.WEBMANIFEST").field(.contentType) == "application/manifest+json")
        }
    }

    @Test func aMissingFileIs404() throws {
        try withFiles({ _ in }) { client, _ throws in
            #expect(try client.get("/static/nope.html").status == .notFound)
            #expect(try client.get("/static/nope/deeper.html").status == .notFound)
        }
    }

    @Test func aDirectoryWithItsSlashServesTheIndexFile() throws {
        try withFiles({ try $0.write("docs/index.html", "<h1>docs</h1>") }) { client, _ throws in
            let response = try client.get("/static/docs/")
            #expect(response.text == "<h1>docs</h1>")
            #expect(response.headerFields[.contentType] == "text/html; charset=utf-8")
        }
    }

    @Test func aDirectoryWithoutItsSlashIsRedirected() throws {
        try withFiles({ try $0.write("docs/index.html", "<h1>docs</h1>") }) { client, _ throws in
            let response = try client.get("/static/docs?lang=en")
            #expect(response.status == .movedPermanently)
            #expect(response.headerFields[.location] == "/static/docs/?lang=en")
        }
    }

    @Test func aDirectoryWithoutAnIndexFileIs404() throws {
        try withFiles(options: HTTPFileOptions(indexFile: nil), { try $0.write("docs/index.html", "x") }) { client, _ throws in
            #expect(try client.get("/static/docs/").status == .notFound)
        }
    }

    @Test func cacheControlIsSentWhenConfigured() throws {
        try withFiles(options: HTTPFileOptions(cacheControl: "public, max-age=60"), { try $0.write("a.txt", "a") }) { client, _ throws in
            #expect(try client.get("/static/a.txt").field(.cacheControl) == "public, max-age=60")
        }
        try withFiles({ try $0.write("a.txt", "a") }) { client, _ throws in
            #expect(try client.get("/static/a.txt").field(.cacheControl) == nil)
        }
    }

    @Test func anEmptyFileIsSentWithLengthZero() throws {
        try withFiles({ try $0.write("empty.txt", "") }) { client, _ throws in
            let response = try client.get("/static/empty.txt")
            #expect(response.status == .ok)
            #expect(response.headerFields[.contentLength] == "0")
        }
    }
}
