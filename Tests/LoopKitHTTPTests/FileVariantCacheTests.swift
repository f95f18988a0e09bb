import Foundation
import HTTPTypes
@testable import LoopKitHTTP
import LoopKitHTTPTesting
import Testing

/// A request taking a precompressed variant is answered from the path's record for as long as the `stat`
/// of the file and of each variant path its choice depends on finds them as recorded.
@Suite("Files: kept precompressed variants")
struct FileVariantCacheTests {
    @Test(arguments: HTTPTestMode.everyProtocol)
    func aKeptVariantIsServedAgainAndARewrittenOneFresh(mode: HTTPTestMode) throws {
        try withFiles(mode: mode, {
            try $0.write("a.txt", "plain text")
            try $0.write("a.txt.br", [1, 2, 3])
        }) { client, fixture throws in
            let first = try client.get("/static/a.txt", [.acceptEncoding: "br"])
            let again = try client.get("/static/a.txt", [.acceptEncoding: "br"])
            for response in [first, again] {
                #expect(response.field(.contentEncoding) == "br")
                #expect(Array(response.body) == [1, 2, 3])
                #expect(response.field(.vary) == "Accept-Encoding")
                #expect(response.field(.contentType) == "text/plain; charset=utf-8")
            }
            #expect(again.field(.eTag) == first.field(.eTag))
            try fixture.write("a.txt.br", [4, 5, 6])  // the same size, rewritten in place
            let fresh = try client.get("/static/a.txt", [.acceptEncoding: "br"])
            #expect(Array(fresh.body) == [4, 5, 6])
            #expect(fresh.field(.eTag) != first.field(.eTag))
        }
    }

    @Test func aVariantThatAppearsIsChosenByTheNextRequestPreferringIt() throws {
        try withFiles({
            try $0.write("a.txt", "plain text")
            try $0.write("a.txt.gz", [0x1f, 0x8b])
        }) { client, fixture throws in
            for _ in 0..<2 {
                #expect(try client.get("/static/a.txt", [.acceptEncoding: "gzip, br"]).field(.contentEncoding) == "gzip")
            }
            try fixture.write("a.txt.br", [9])
            let response = try client.get("/static/a.txt", [.acceptEncoding: "gzip, br"])
            #expect(response.field(.contentEncoding) == "br")
            #expect(Array(response.body) == [9])
        }
    }

    @Test func aVariantThatVanishesIsNotServed() throws {
        try withFiles({
            try $0.write("a.txt", "plain text")
            try $0.write("a.txt.br", [1, 2])
        }) { client, fixture throws in
            #expect(try client.get("/static/a.txt", [.acceptEncoding: "br"]).field(.contentEncoding) == "br")
            #expect(try client.get("/static/a.txt", [.acceptEncoding: "br"]).field(.contentEncoding) == "br")
            try FileManager.default.removeItem(atPath: fixture.root + "/a.txt.br")
            let response = try client.get("/static/a.txt", [.acceptEncoding: "br"])
            #expect(response.field(.contentEncoding) == nil)
            #expect(response.text == "plain text")
            #expect(try client.get("/static/a.txt", [.acceptEncoding: "br"]).text == "plain text")  // the absence kept
        }
    }

    @Test func aVariantIsNotServedOnceItsFileIsRemoved() throws {
        try withFiles({
            try $0.write("a.txt", "plain text")
            try $0.write("a.txt.br", [1, 2])
        }) { client, fixture throws in
            #expect(try client.get("/static/a.txt", [.acceptEncoding: "br"]).status == .ok)
            #expect(try client.get("/static/a.txt", [.acceptEncoding: "br"]).status == .ok)
            try FileManager.default.removeItem(atPath: fixture.root + "/a.txt")
            #expect(try client.get("/static/a.txt", [.acceptEncoding: "br"]).status == .notFound)
        }
    }

    /// The variant of a file too large to keep is kept on its own.
    @Test func theSmallVariantOfALargeFileIsKept() throws {
        let large = String(repeating: "x", count: HTTPFileServer.smallFileLimit + 100)
        try withFiles({
            try $0.write("big.txt", large)
            try $0.write("big.txt.zst", [7, 7, 7])
        }) { client, _ throws in
            for _ in 0..<2 {
                let response = try client.get("/static/big.txt", [.acceptEncoding: "zstd"])
                #expect(response.field(.contentEncoding) == "zstd")
                #expect(Array(response.body) == [7, 7, 7])
            }
            #expect(try client.get("/static/big.txt").text == large)
        }
    }

    @Test func aKeptVariantAnswersValidatorsRangesAndHead() throws {
        try withFiles({
            try $0.write("a.txt", "plain text")
            try $0.write("a.txt.gz", [0, 1, 2, 3, 4, 5])
        }) { client, _ throws in
            let first = try client.get("/static/a.txt", [.acceptEncoding: "gzip"])
            let tag = try #require(first.field(.eTag))
            let unchanged = try client.get("/static/a.txt", [.acceptEncoding: "gzip", .ifNoneMatch: tag])
            #expect(unchanged.status == .notModified)
            let range = try client.get("/static/a.txt", [.acceptEncoding: "gzip", .range: "bytes=1-2"])
            #expect(range.status == .partialContent)
            #expect(Array(range.body) == [1, 2])
            #expect(range.field(.contentEncoding) == "gzip")
            let head = try client.get("/static/a.txt", [.acceptEncoding: "gzip"], method: .head)
            #expect(head.field(.contentLength) == "6")
            #expect(head.body.isEmpty)
        }
    }

    @Test func identityRefusedWithNoVariantIsNotAcceptable() throws {
        try withFiles({ try $0.write("a.txt", "plain text") }) { client, _ throws in
            #expect(try client.get("/static/a.txt").status == .ok)
            #expect(try client.get("/static/a.txt", [.acceptEncoding: "br, identity;q=0"]).status == .notAcceptable)
            #expect(try client.get("/static/a.txt", [.acceptEncoding: "br, identity;q=0"]).status == .notAcceptable)
        }
    }
}

/// The cache's options and its table.
@Suite("Files: the small-file cache's options and eviction")
struct FileCacheOptionsTests {
    @Test(arguments: [HTTPFileOptions(cachedFileSizeLimit: 0), HTTPFileOptions(cachedPathLimit: 0)])
    func aCacheTurnedOffServesEveryRequestFromTheFile(options: HTTPFileOptions) throws {
        #expect(HTTPFileServer(root: "/", options: options).cache == nil)
        try withFiles(options: options, {
            try $0.write("a.txt", "first")
            try $0.write("b.txt", "plain")
            try $0.write("b.txt.br", [1])
        }) { client, fixture throws in
            #expect(try client.get("/static/a.txt").text == "first")
            #expect(try client.get("/static/a.txt").text == "first")
            try fixture.write("a.txt", "other")
            #expect(try client.get("/static/a.txt").text == "other")
            #expect(Array(try client.get("/static/b.txt", [.acceptEncoding: "br"]).body) == [1])
        }
    }

    @Test func theSizeLimitBoundsWhatIsKeptAndWhatIsReadWhole() {
        let server = HTTPFileServer(root: "/srv", options: HTTPFileOptions(cachedFileSizeLimit: 64 * 1024, cachedPathLimit: 8))
        #expect(server.cache?.sizeLimit == 64 * 1024)
        #expect(server.cache?.pathLimit == 8)
        #expect(server.readWholeLimit == 64 * 1024)
        let small = HTTPFileServer(root: "/srv", options: HTTPFileOptions(cachedFileSizeLimit: 100))
        #expect(small.readWholeLimit == HTTPFileServer.smallFileLimit)
        #expect(HTTPFileOptions(cachedFileSizeLimit: 1 << 40).cachedFileSizeLimit == 16 * 1024 * 1024)
    }

    @Test func aFileAboveTheSizeLimitIsServedWhole() throws {
        try withFiles(options: HTTPFileOptions(cachedFileSizeLimit: 4), { try $0.write("a.txt", "longer than four") }) { client, fixture throws in
            #expect(try client.get("/static/a.txt").text == "longer than four")
            #expect(try client.get("/static/a.txt").text == "longer than four")
            try fixture.write("a.txt", "changed in place!")
            #expect(try client.get("/static/a.txt").text == "changed in place!")
        }
    }

    /// Second chance: a full table drops the first path from the hand not used since the hand passed.
    @Test func aFullTableDropsAPathNotUsedSinceTheHandPassed() {
        let cache = HTTPFileCache(pathLimit: 2, sizeLimit: 1024)
        cache.update("a", paths: ("/a", [])) { _ in }
        cache.update("b", paths: ("/b", [])) { _ in }
        #expect(cache.record(for: "a") != nil)  // used
        cache.update("c", paths: ("/c", [])) { _ in }
        #expect(cache.pathCount == 2)
        #expect(cache.record(for: "b") == nil)
        #expect(cache.record(for: "a")?.path == "/a")
        #expect(cache.record(for: "c")?.path == "/c")
    }

    @Test func aTableOfUsedPathsDropsOneAfterATurn() {
        let cache = HTTPFileCache(pathLimit: 3, sizeLimit: 1024)
        for key in ["a", "b", "c"] { cache.update(Substring(key), paths: ("/" + key, [])) { _ in } }
        for key in ["a", "b", "c"] { #expect(cache.record(for: Substring(key)) != nil) }
        cache.update("d", paths: ("/d", [])) { _ in }
        #expect(cache.pathCount == 3)
        #expect(["a", "b", "c"].filter { cache.record(for: Substring($0)) == nil }.count == 1)
        #expect(cache.record(for: "d") != nil)
    }
}
