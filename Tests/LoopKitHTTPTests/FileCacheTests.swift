import Foundation
import HTTPTypes
import LoopKit
import LoopKitHTTP
import LoopKitHTTPTesting
import Testing

/// A small file read whole is kept and answered again inline, for as long as one `stat(2)` a request finds
/// the path naming the same, unchanged file.
@Suite("Files: small files kept between requests")
struct FileCacheTests {
    @Test(arguments: HTTPTestMode.everyProtocol)
    func aFileRewrittenBetweenRequestsIsServedFresh(mode: HTTPTestMode) throws {
        try withFiles(mode: mode, { try $0.write("a.txt", "first") }) { client, fixture throws in
            let first = try client.get("/static/a.txt")
            #expect(first.text == "first")
            #expect(try client.get("/static/a.txt").text == "first")  // kept
            try fixture.write("a.txt", "other")  // the same size, rewritten in place
            let second = try client.get("/static/a.txt")
            #expect(second.text == "other")
            #expect(second.field(.eTag) != first.field(.eTag))
            try fixture.write("a.txt", "a longer text")
            #expect(try client.get("/static/a.txt").text == "a longer text")
            #expect(try client.get("/static/a.txt").field(.contentLength) == "13")
        }
    }

    @Test func aFileReplacedByRenameIsServedFresh() throws {
        try withFiles({ try $0.write("a.txt", "first") }) { client, fixture throws in
            #expect(try client.get("/static/a.txt").text == "first")
            let staged = try fixture.write("staged.txt", "fresh")
            #expect(rename(staged, fixture.root + "/a.txt") == 0)
            #expect(try client.get("/static/a.txt").text == "fresh")
        }
    }

    @Test func aFileRemovedBetweenRequestsIsNotFound() throws {
        try withFiles({ try $0.write("a.txt", "first") }) { client, fixture throws in
            #expect(try client.get("/static/a.txt").status == .ok)
            #expect(try client.get("/static/a.txt").status == .ok)
            try FileManager.default.removeItem(atPath: fixture.root + "/a.txt")
            #expect(try client.get("/static/a.txt").status == .notFound)
        }
    }

    @Test func aFileReplacedByALinkOutOfTheRootIsNotFound() throws {
        let outside = FileManager.default.temporaryDirectory.appendingPathComponent("loopkit-outside-\(UUID().uuidString)").path
        try Data("secret".utf8).write(to: URL(fileURLWithPath: outside))
        defer { try? FileManager.default.removeItem(atPath: outside) }
        try withFiles({ try $0.write("a.txt", "first") }) { client, fixture throws in
            #expect(try client.get("/static/a.txt").text == "first")
            #expect(try client.get("/static/a.txt").text == "first")
            try FileManager.default.removeItem(atPath: fixture.root + "/a.txt")
            try FileManager.default.createSymbolicLink(atPath: fixture.root + "/a.txt", withDestinationPath: outside)
            let response = try client.get("/static/a.txt")
            #expect(response.status == .notFound)
            #expect(response.text != "secret")
        }
    }

    @Test func aKeptFileAnswersValidatorsRangesAndHead() throws {
        try withFiles({ try $0.write("a.txt", "0123456789") }) { client, _ throws in
            let first = try client.get("/static/a.txt")
            let tag = try #require(first.field(.eTag))
            #expect(try client.get("/static/a.txt", [.ifNoneMatch: tag]).status == .notModified)
            let range = try client.get("/static/a.txt", [.range: "bytes=2-4"])
            #expect(range.status == .partialContent)
            #expect(range.text == "234")
            #expect(range.field(.contentRange) == "bytes 2-4/10")
            let head = try client.get("/static/a.txt", method: .head)
            #expect(head.field(.contentLength) == "10")
            #expect(head.body.isEmpty)
            let again = try client.get("/static/a.txt")
            #expect(again.text == "0123456789")
            #expect(again.field(.eTag) == tag)
            #expect(again.field(.lastModified) == first.field(.lastModified))
            #expect(again.field(.contentType) == first.field(.contentType))
        }
    }

    @Test func aClientTakingAVariantGetsItAfterAKeptIdentity() throws {
        try withFiles({
            try $0.write("a.txt", "plain")
            try $0.write("a.txt.gz", [0x1f, 0x8b])
        }) { client, _ throws in
            #expect(try client.get("/static/a.txt").text == "plain")
            #expect(try client.get("/static/a.txt").text == "plain")
            let variant = try client.get("/static/a.txt", [.acceptEncoding: "gzip"])
            #expect(variant.field(.contentEncoding) == "gzip")
            #expect(Array(variant.body) == [0x1f, 0x8b])
        }
    }

    /// Inline middleware see the answer of the route's task (the first request) and the inline answer
    /// (the next) alike, each with the request they passed on.
    @Test(arguments: HTTPTestMode.everyProtocol)
    func inlineMiddlewareSeeTheTaskAndTheInlineAnswerAlike(mode: HTTPTestMode) throws {
        let fixture = try FileFixture()
        defer { fixture.remove() }
        try fixture.write("a.txt", "hello")
        var router = HTTPRouter()
        router.use(before: { request in
            request.head.headerFields[HTTPField.Name("X-Seen")!] = "yes"
            return nil
        }, after: { response, request in
            response.headerFields[HTTPField.Name("X-Echo")!] = request.head.headerFields[HTTPField.Name("X-Seen")!] ?? "no"
        })
        router.files("/static", root: fixture.root)
        let group = try LoopGroup(threads: 1)
        defer { group.shutdown() }
        let client = try HTTPTestClient(router: router, mode: mode, group: group)
        defer { client.shutDown() }
        for _ in 0..<3 {
            let response = try client.get("/static/a.txt")
            #expect(response.text == "hello")
            #expect(response.field(HTTPField.Name("X-Echo")!) == "yes")
        }
        #expect(try client.get("/static/missing.txt").field(HTTPField.Name("X-Echo")!) == "yes")
    }

    @Test func asyncMiddlewareStillServeKeptFiles() throws {
        let fixture = try FileFixture()
        defer { fixture.remove() }
        try fixture.write("a.txt", "hello")
        var router = HTTPRouter()
        router.use { request, next in
            var response = try await next(request)
            response.headerFields[HTTPField.Name("X-Async")!] = "1"
            return response
        }
        router.files("/static", root: fixture.root)
        let group = try LoopGroup(threads: 1)
        defer { group.shutdown() }
        let client = try HTTPTestClient(router: router, mode: .inMemory, group: group)
        defer { client.shutDown() }
        for _ in 0..<2 {
            let response = try client.get("/static/a.txt")
            #expect(response.text == "hello")
            #expect(response.field(HTTPField.Name("X-Async")!) == "1")
        }
        try fixture.write("a.txt", "fresh")
        #expect(try client.get("/static/a.txt").text == "fresh")
    }
}
