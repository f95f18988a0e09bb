import HTTPTypes
@testable import LoopKitHTTP
import LoopKitHTTPTesting
import Testing

@Suite("Files: byte ranges (RFC 9110 §14)")
struct FileRangeTests {
    static let digits = "0123456789abcdefghij"  // 20 bytes

    static func setUp(_ fixture: FileFixture) throws { try fixture.write("d.txt", digits) }

    @Test func oneRangeIs206WithContentRange() throws {
        try withFiles(Self.setUp) { client, _ throws in
            let response = try client.get("/static/d.txt", [.range: "bytes=2-5"])
            #expect(response.status == .partialContent)
            #expect(response.text == "2345")
            #expect(response.headerFields[.contentRange] == "bytes 2-5/20")
            #expect(response.headerFields[.contentLength] == "4")
        }
    }

    @Test func anOpenRangeRunsToTheEnd() throws {
        try withFiles(Self.setUp) { client, _ throws in
            let response = try client.get("/static/d.txt", [.range: "bytes=15-"])
            #expect(response.text == "fghij")
            #expect(response.headerFields[.contentRange] == "bytes 15-19/20")
        }
    }

    @Test func aSuffixRangeIsTheLastBytes() throws {
        try withFiles(Self.setUp) { client, _ throws in
            let response1 = try client.get("/static/d.txt", [.range: "bytes=-3"])
            #expect(response1.text == "hij")
            let response2 = try client.get("/static/d.txt", [.range: "bytes=-300"])
            #expect(response2.field(.contentRange) == "bytes 0-19/20")
        }
    }

    @Test func aLastPastTheEndIsClipped() throws {
        try withFiles(Self.setUp) { client, _ throws in
            let response = try client.get("/static/d.txt", [.range: "bytes=18-1000"])
            #expect(response.text == "ij")
            #expect(response.headerFields[.contentRange] == "bytes 18-19/20")
        }
    }

    @Test func severalRangesAreMultipartByteranges() throws {
        try withFiles(Self.setUp) { client, _ throws in
            let response = try client.get("/static/d.txt", [.range: "bytes=0-1, 10-11"])
            #expect(response.status == .partialContent)
            let type = try #require(response.headerFields[.contentType])
            #expect(type.hasPrefix("multipart/byteranges; boundary="))
            let boundary = String(type.dropFirst("multipart/byteranges; boundary=".count))
            #expect(response.text == "\r\n--\(boundary)\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Range: bytes 0-1/20\r\n\r\n01"
                    + "\r\n--\(boundary)\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Range: bytes 10-11/20\r\n\r\nab"
                    + "\r\n--\(boundary)--\r\n")
            #expect(response.headerFields[.contentLength] == "\(response.body.count)")
            #expect(response.headerFields[.contentRange] == nil)
        }
    }

    /// A file beyond ``HTTPFileServer/smallFileLimit`` is not read whole: its parts stream from the open
    /// file (read in chunks, or sent with `sendfile(2)` live), and come out as a small file's do.
    @Test(arguments: HTTPTestMode.allCases)
    func severalRangesOfAFileBeyondTheSmallFileLimitStreamFromTheFile(mode: HTTPTestMode) throws {
        let size = HTTPFileServer.smallFileLimit + 5_000
        let contents = (0..<size).map { UInt8(ascii: "a") + UInt8($0 % 26) }
        try withFiles(mode: mode, { try $0.write("big.txt", contents) }) { client, _ throws in
            let last = size - 1
            let response = try client.get("/static/big.txt", [.range: "bytes=0-1, \(last - 2)-"])
            #expect(response.status == .partialContent)
            let type = try #require(response.headerFields[.contentType])
            let boundary = String(type.dropFirst("multipart/byteranges; boundary=".count))
            let tail = String(decoding: contents[(last - 2)...], as: UTF8.self)
            #expect(response.text == "\r\n--\(boundary)\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Range: bytes 0-1/\(size)\r\n\r\nab"
                    + "\r\n--\(boundary)\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Range: bytes \(last - 2)-\(last)/\(size)\r\n\r\n\(tail)"
                    + "\r\n--\(boundary)--\r\n")
            let whole = try client.get("/static/big.txt")
            #expect(Array(whole.body) == contents)
            #expect(whole.field(.contentLength) == String(size))
        }
    }

    @Test func overlappingRangesAreMerged() throws {
        try withFiles(Self.setUp) { client, _ throws in
            let response = try client.get("/static/d.txt", [.range: "bytes=5-9, 0-6, 8-10"])
            #expect(response.text == "0123456789a")
            #expect(response.headerFields[.contentRange] == "bytes 0-10/20")
        }
    }

    @Test func rangesPastTheLimitSendTheWholeFile() throws {
        try withFiles(options: HTTPFileOptions(maxRanges: 4), Self.setUp) { client, _ throws in
            let many = "bytes=" + (0..<5).map { "\($0 * 2)-\($0 * 2)" }.joined(separator: ",")
            let response = try client.get("/static/d.txt", [.range: many])
            #expect(response.status == .ok)
            #expect(response.text == Self.digits)
        }
    }

    @Test func noSatisfiableRangeIs416WithTheLength() throws {
        try withFiles(Self.setUp) { client, _ throws in
            let response = try client.get("/static/d.txt", [.range: "bytes=20-30, 40-"])
            #expect(response.status == .rangeNotSatisfiable)
            #expect(response.headerFields[.contentRange] == "bytes */20")
            let response3 = try client.get("/static/d.txt", [.range: "bytes=-0"])
            #expect(response3.status == .rangeNotSatisfiable)
        }
    }

    @Test func anUnsatisfiableRangeBesideASatisfiableOneIsLeftOut() throws {
        try withFiles(Self.setUp) { client, _ throws in
            let response = try client.get("/static/d.txt", [.range: "bytes=50-60, 1-2"])
            #expect(response.status == .partialContent)
            #expect(response.text == "12")
        }
    }

    @Test(arguments: ["bytes=5-2", "bytes=abc", "items=0-1", "bytes=", "bytes=1-2-3", "bytes=--1", "bytes=99999999999999999999-"])
    func aMalformedRangeIsIgnored(field: String) throws {
        try withFiles(Self.setUp) { client, _ throws in
            let response = try client.get("/static/d.txt", [.range: field])
            #expect(response.status == .ok)
            #expect(response.text == Self.digits)
        }
    }

    @Test func emptyListElementsAndSpacesAreAllowed() {
        #expect(HTTPByteRanges.resolve("bytes = 0-1 , , 4-5", length: 20, limit: 16) == .satisfiable([0..<2, 4..<6]))
        #expect(HTTPByteRanges.resolve("BYTES=0-1", length: 20, limit: 16) == .satisfiable([0..<2]))
    }

    @Test func rangesAskedOutOfOrderKeepTheirOrder() {
        #expect(HTTPByteRanges.resolve("bytes=10-11,0-1", length: 20, limit: 16) == .satisfiable([10..<12, 0..<2]))
        #expect(HTTPByteRanges.resolve("bytes=4-5,6-7", length: 20, limit: 16) == .satisfiable([4..<8]))  // adjacent: merged
    }

    @Test func anEmptyFileHasNoSatisfiableRange() {
        #expect(HTTPByteRanges.resolve("bytes=0-", length: 0, limit: 16) == .unsatisfiable)
        #expect(HTTPByteRanges.resolve("bytes=-5", length: 0, limit: 16) == .unsatisfiable)
    }

    @Test func headOfARangeHasItsLengthAndNoBody() throws {
        try withFiles(Self.setUp) { client, _ throws in
            let response = try client.get("/static/d.txt", [.range: "bytes=0-3"], method: .head)
            #expect(response.status == .partialContent)
            #expect(response.headerFields[.contentLength] == "4")
            #expect(response.body.isEmpty)
        }
    }

    @Test func ifRangeWithTheCurrentTagSendsTheRange() throws {
        try withFiles(Self.setUp) { client, _ throws in
            let tag = try #require(try client.get("/static/d.txt").headerFields[.eTag])
            let response4 = try client.get("/static/d.txt", [.range: "bytes=0-1", .ifRange: tag])
            #expect(response4.status == .partialContent)
        }
    }

    @Test func ifRangeWithAnotherTagSendsTheWholeFile() throws {
        try withFiles(Self.setUp) { client, _ throws in
            let response = try client.get("/static/d.txt", [.range: "bytes=0-1", .ifRange: "\"stale\""])
            #expect(response.status == .ok)
            #expect(response.text == Self.digits)
        }
    }

    @Test func ifRangeWithAWeakTagSendsTheWholeFile() throws {
        try withFiles(Self.setUp) { client, _ throws in
            let tag = try #require(try client.get("/static/d.txt").headerFields[.eTag])
            let response5 = try client.get("/static/d.txt", [.range: "bytes=0-1", .ifRange: "W/" + tag])
            #expect(response5.status == .ok)
        }
    }

    @Test func ifRangeWithTheModificationDateSendsTheRange() throws {
        try withFiles(Self.setUp) { client, _ throws in
            let modified = try #require(try client.get("/static/d.txt").headerFields[.lastModified])
            let response6 = try client.get("/static/d.txt", [.range: "bytes=0-1", .ifRange: modified])
            #expect(response6.status == .partialContent)
            let response7 = try client.get("/static/d.txt", [.range: "bytes=0-1", .ifRange: "Mon, 01 Jan 2001 00:00:00 GMT"])
            #expect(response7.status == .ok)
        }
    }
}
