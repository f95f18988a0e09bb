import Foundation
import HTTPTypes
@testable import LoopKitHTTP
import LoopKitHTTPTesting
import Testing

@Suite("Files: validators and conditional requests (RFC 9110 §8.8, §13)")
struct FileValidatorTests {
    /// A file last modified at 2024-01-02 03:04:05 UTC.
    static let modified = 1_704_164_645
    static let modifiedText = "Tue, 02 Jan 2024 03:04:05 GMT"

    static func setUp(_ fixture: FileFixture) throws {
        let path = try fixture.write("a.txt", "0123456789")
        try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSince1970: TimeInterval(modified))], ofItemAtPath: path)
    }

    @Test func aFileHasAStrongETagAndLastModified() throws {
        try withFiles(Self.setUp) { client, _ throws in
            let response = try client.get("/static/a.txt")
            let tag = try #require(response.headerFields[.eTag])
            #expect(tag.hasPrefix("\"") && tag.hasSuffix("\"") && !tag.hasPrefix("W/"))
            #expect(response.headerFields[.lastModified] == Self.modifiedText)
        }
    }

    @Test func theETagChangesWhenTheFileChanges() throws {
        try withFiles(Self.setUp) { client, fixture throws in
            let before = try client.get("/static/a.txt").headerFields[.eTag]
            try fixture.write("a.txt", "0123456789abc")
            #expect(try client.get("/static/a.txt").field(.eTag) != before)
        }
    }

    @Test func ifNoneMatchWithTheTagIs304() throws {
        try withFiles(Self.setUp) { client, _ throws in
            let tag = try #require(try client.get("/static/a.txt").headerFields[.eTag])
            let response = try client.get("/static/a.txt", [.ifNoneMatch: "\"other\", \(tag)"])
            #expect(response.status == .notModified)
            #expect(response.body.isEmpty)
            #expect(response.headerFields[.eTag] == tag)
        }
    }

    @Test func ifNoneMatchComparesWeakly() throws {
        try withFiles(Self.setUp) { client, _ throws in
            let tag = try #require(try client.get("/static/a.txt").headerFields[.eTag])
            let response1 = try client.get("/static/a.txt", [.ifNoneMatch: "W/" + tag])
            #expect(response1.status == .notModified)
        }
    }

    @Test func ifNoneMatchStarIs304AndAnotherTagIs200() throws {
        try withFiles(Self.setUp) { client, _ throws in
            let response2 = try client.get("/static/a.txt", [.ifNoneMatch: "*"])
            #expect(response2.status == .notModified)
            let response3 = try client.get("/static/a.txt", [.ifNoneMatch: "\"stale\""])
            #expect(response3.status == .ok)
        }
    }

    @Test func ifModifiedSinceTheModificationIs304AndBeforeIt200() throws {
        try withFiles(Self.setUp) { client, _ throws in
            let response4 = try client.get("/static/a.txt", [.ifModifiedSince: Self.modifiedText])
            #expect(response4.status == .notModified)
            let response5 = try client.get("/static/a.txt", [.ifModifiedSince: "Mon, 01 Jan 2024 00:00:00 GMT"])
            #expect(response5.status == .ok)
        }
    }

    @Test func ifModifiedSinceIsIgnoredBesideIfNoneMatch() throws {
        try withFiles(Self.setUp) { client, _ throws in
            let response = try client.get("/static/a.txt", [.ifNoneMatch: "\"stale\"", .ifModifiedSince: Self.modifiedText])
            #expect(response.status == .ok)
        }
    }

    @Test func anUnparsableIfModifiedSinceIsIgnored() throws {
        try withFiles(Self.setUp) { client, _ throws in
            let response6 = try client.get("/static/a.txt", [.ifModifiedSince: "yesterday"])
            #expect(response6.status == .ok)
        }
    }

    @Test func obsoleteDateFormatsAreUnderstood() {
        #expect(HTTPDateFormat.seconds("Tuesday, 02-Jan-24 03:04:05 GMT") == Self.modified)
        #expect(HTTPDateFormat.seconds("Tue Jan  2 03:04:05 2024") == Self.modified)
        #expect(HTTPDateFormat.seconds(Self.modifiedText) == Self.modified)
    }

    @Test func ifMatchWithAnotherTagIs412() throws {
        try withFiles(Self.setUp) { client, _ throws in
            let tag = try #require(try client.get("/static/a.txt").headerFields[.eTag])
            let response7 = try client.get("/static/a.txt", [.ifMatch: "\"stale\""])
            #expect(response7.status == .preconditionFailed)
            let response8 = try client.get("/static/a.txt", [.ifMatch: tag])
            #expect(response8.status == .ok)
            #expect(try client.get("/static/a.txt", [.ifMatch: "W/" + tag]).status == .preconditionFailed)  // strong comparison
        }
    }

    @Test func ifUnmodifiedSinceBeforeTheModificationIs412() throws {
        try withFiles(Self.setUp) { client, _ throws in
            let response9 = try client.get("/static/a.txt", [.ifUnmodifiedSince: "Mon, 01 Jan 2024 00:00:00 GMT"])
            #expect(response9.status == .preconditionFailed)
            let response10 = try client.get("/static/a.txt", [.ifUnmodifiedSince: Self.modifiedText])
            #expect(response10.status == .ok)
        }
    }
}
