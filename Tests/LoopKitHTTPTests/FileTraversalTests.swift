import Foundation
import HTTPTypes
import LoopKit
import LoopKitHTTP
import LoopKitHTTPTesting
import Testing

@Suite("Files: nothing outside the root is served")
struct FileTraversalTests {
    /// A root with `public.txt`, beside a `secret.txt` outside it.
    static func setUp(_ fixture: FileFixture) throws {
        try fixture.write("secret.txt", "secret")
        try fixture.write("www/public.txt", "public")
    }

    static func withRoot(options: HTTPFileOptions = HTTPFileOptions(), _ setUp: (FileFixture) throws -> Void = { _ in },
                         _ body: (HTTPTestClient, FileFixture) throws -> Void) throws {
        let fixture = try FileFixture()
        defer { fixture.remove() }
        try Self.setUp(fixture)
        try setUp(fixture)
        var router = HTTPRouter()
        router.files("/static", root: fixture.root + "/www", options: options)
        let group = try LoopGroup(threads: 1)
        defer { group.shutdown() }
        let client = try HTTPTestClient(router: router, group: group)
        defer { client.shutDown() }
        try body(client, fixture)
    }

    @Test(arguments: ["/static/../secret.txt", "/static/%2e%2e/secret.txt", "/static/%2E%2E/secret.txt", "/static/.%2e/secret.txt",
                      "/static/sub/../../secret.txt", "/static/%2e%2e%2fsecret.txt", "/static/..%5csecret.txt", "/static/./public.txt"])
    func dotSegmentsWrittenOrEncodedAre400(path: String) throws {
        try Self.withRoot { client, _ throws in
            #expect(try client.get(path).status == .badRequest)
        }
    }

    @Test func anEncodedNulIs400() throws {
        try Self.withRoot { client, _ throws in
            #expect(try client.get("/static/public.txt%00.html").status == .badRequest)
        }
    }

    @Test func aMalformedEscapeIs400() throws {
        try Self.withRoot { client, _ throws in
            #expect(try client.get("/static/public%2.txt").status == .badRequest)
            #expect(try client.get("/static/public%zz.txt").status == .badRequest)
        }
    }

    @Test func anEncodedNameIsDecoded() throws {
        try Self.withRoot({ try $0.write("www/a b.txt", "spaced") }) { client, _ throws in
            #expect(try client.get("/static/a%20b.txt").text == "spaced")
        }
    }

    @Test func aSymbolicLinkOutOfTheRootIs404() throws {
        try Self.withRoot({ try FileManager.default.createSymbolicLink(atPath: $0.root + "/www/link.txt", withDestinationPath: $0.root + "/secret.txt") }) { client, _ throws in
            #expect(try client.get("/static/link.txt").status == .notFound)
        }
    }

    @Test func aLinkedDirectoryOutOfTheRootIs404() throws {
        try Self.withRoot({ try FileManager.default.createSymbolicLink(atPath: $0.root + "/www/up", withDestinationPath: $0.root) }) { client, _ throws in
            #expect(try client.get("/static/up/secret.txt").status == .notFound)
        }
    }

    @Test func aSymbolicLinkOutOfTheRootIsServedWhenAllowed() throws {
        try Self.withRoot(options: HTTPFileOptions(followsSymbolicLinksOutOfRoot: true),
                          { try FileManager.default.createSymbolicLink(atPath: $0.root + "/www/link.txt", withDestinationPath: $0.root + "/secret.txt") }) { client, _ throws in
            #expect(try client.get("/static/link.txt").text == "secret")
        }
    }

    @Test func aSymbolicLinkInsideTheRootIsServed() throws {
        try Self.withRoot({ try FileManager.default.createSymbolicLink(atPath: $0.root + "/www/alias.txt", withDestinationPath: $0.root + "/www/public.txt") }) { client, _ throws in
            #expect(try client.get("/static/alias.txt").text == "public")
        }
    }

    @Test func hiddenFilesAre404UnlessServed() throws {
        try Self.withRoot({ try $0.write("www/.env", "KEY=1") }) { client, _ throws in
            #expect(try client.get("/static/.env").status == .notFound)
        }
        try Self.withRoot(options: HTTPFileOptions(servesHiddenFiles: true), { try $0.write("www/.env", "KEY=1") }) { client, _ throws in
            #expect(try client.get("/static/.env").text == "KEY=1")
        }
    }

    @Test func aDoubledSlashStaysInsideTheRoot() throws {
        try Self.withRoot { client, _ throws in
            #expect(try client.get("/static//public.txt").text == "public")
            #expect(try client.get("/static///etc/passwd").status == .notFound)
        }
    }
}
