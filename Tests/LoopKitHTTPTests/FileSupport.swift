import Foundation
import HTTPTypes
import LoopKit
import LoopKitHTTP
import LoopKitHTTPTesting

/// A scratch directory of files for the file-serving tests, removed at `remove()`.
final class FileFixture {
    let root: String

    init() throws {
        root = FileManager.default.temporaryDirectory.appendingPathComponent("loopkit-files-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
    }

    /// Writes `contents` at `path` (relative to the root), making its directories.
    @discardableResult
    func write(_ path: String, _ contents: String) throws -> String {
        try write(path, Array(contents.utf8))
    }

    @discardableResult
    func write(_ path: String, _ bytes: [UInt8]) throws -> String {
        let full = root + "/" + path
        try FileManager.default.createDirectory(atPath: (full as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try Data(bytes).write(to: URL(fileURLWithPath: full))
        return full
    }

    func remove() { try? FileManager.default.removeItem(atPath: root) }
}

/// Runs `body` with a client (in memory by default) of a router serving `fixture`'s root at `/static`,
/// served on a one-loop group whose pool reads the files.
func withFiles(mode: HTTPTestMode = .inMemory, options: HTTPFileOptions = HTTPFileOptions(),
               _ setUp: (FileFixture) throws -> Void, _ body: (HTTPTestClient, FileFixture) throws -> Void) throws {
    let fixture = try FileFixture()
    defer { fixture.remove() }
    try setUp(fixture)
    // Files changed within the last 50 ms are never kept (``FileIdentity/changedTooRecentlyToKeep``): the
    // fixture's files are let age past that, so that the tests reach the kept-file path too. Not a wait for an
    // order: the file's timestamps must lie in the past.
    usleep(60_000)
    var router = HTTPRouter()
    router.files("/static", root: fixture.root, options: options)
    let group = try LoopGroup(threads: 1)
    defer { group.shutdown() }
    let client = try HTTPTestClient(router: router, mode: mode, group: group)
    defer { client.shutDown() }
    try body(client, fixture)
}

extension HTTPTestClient {
    /// `GET` (or `method`) of `path` with these fields.
    func get(_ path: String, _ fields: [HTTPField.Name: String] = [:], method: HTTPRequest.Method = .get) throws -> HTTPTestResponse {
        var headerFields = HTTPFields()
        for (name, value) in fields { headerFields[name] = value }
        return try execute(method, path, headerFields: headerFields)
    }
}

extension HTTPTestResponse {
    /// The value of field `name` (a method, so that `#expect(try …)` can take it whole).
    func field(_ name: HTTPField.Name) -> String? { headerFields[name] }
}
