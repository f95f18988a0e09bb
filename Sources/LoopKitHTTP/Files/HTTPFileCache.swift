import HTTPTypes
import LoopKit
import LoopKitNet

/// The small files a file route has sent whole, with what their responses need made once: their bytes,
/// validators and header fields, keyed by the request path's remainder as written.
///
/// An entry is used only while the path still names the very file it was read from: each use checks,
/// with one `stat(2)` on the loop thread (``FileSystem/identity(at:)``), that device, inode, size,
/// modification and change times and mode are the ones `fstat(2)` gave when the bytes were read. A file
/// written, replaced, truncated, `chmod`ed or removed since is a miss, and its request goes the whole way
/// (the work pool, the checks of the root); a path whose component became a link to another file leads
/// to another inode, a miss too. So the bytes sent are the file's as of that `stat`, as they would be
/// read; the `stat` costs what the path's lookup in the kernel does, with no open, read or close.
///
/// It holds at most ``maxEntries`` files of at most ``HTTPFileServer/smallFileLimit`` bytes each (16 MiB
/// at most); past that an entry is dropped for each one added.
///
/// Safe from any thread: one lock around the table, held for a lookup or an insertion only.
final class HTTPFileCache: Sendable {
    /// The most files held.
    static let maxEntries = 1024

    /// One file, as it was read.
    final class Entry: Sendable {
        /// The file's path, checked at each use.
        let path: String
        /// What the path's file was when its bytes were read.
        let identity: FileIdentity
        /// What `fstat(2)` told then.
        let info: FileInfo
        /// The file's bytes.
        let contents: Bytes
        /// The file's name (for its content type).
        let name: Substring
        /// Its `ETag`, `Last-Modified` and the route's own fields.
        let validators: HTTPFileServer.Validators
        /// The fields of a whole `200`: the validators', `Accept-Ranges` and `Content-Type` (the server
        /// frames the body of bytes with its `Content-Length`).
        let wholeFields: HTTPFields

        init(path: String, identity: FileIdentity, info: FileInfo, contents: Bytes, name: Substring,
             validators: HTTPFileServer.Validators, contentType: String) {
            self.path = path
            self.identity = identity
            self.info = info
            self.contents = contents
            self.name = name
            self.validators = validators
            var fields = validators.fields
            fields[.acceptRanges] = "bytes"
            fields[.contentType] = contentType
            wholeFields = fields
        }

        /// Whether the path names this very file still (one `stat(2)`). Blocks briefly; loop thread.
        var isCurrent: Bool { FileSystem.identity(at: path) == identity }
    }

    private let entries = Lock<[Substring: Entry]>([:])

    /// The entry for `key`, if any (not checked: see ``Entry/isCurrent``).
    func entry(for key: Substring) -> Entry? {
        entries.withLock { $0[key] }
    }

    /// Holds `entry` for `key`, dropping another entry when full.
    func insert(_ entry: Entry, for key: Substring) {
        let key = Substring(String(key))  // its own storage, not the request's
        entries.withLock { entries in
            if entries[key] == nil, entries.count >= Self.maxEntries, let any = entries.indices.first { entries.remove(at: any) }
            entries[key] = entry
        }
    }

    /// Drops the entry of `key` when it is `entry` (and not one that replaced it meanwhile).
    func remove(_ key: Substring, ifItIs entry: Entry) {
        entries.withLock { entries in
            if entries[key] === entry { entries[key] = nil }
        }
    }

    /// How many files it holds (for tests).
    var count: Int { entries.withLock { $0.count } }
}
