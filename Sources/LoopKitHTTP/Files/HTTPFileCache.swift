import HTTPTypes
import LoopKit
import LoopKitNet

/// The small files a file route has sent whole, and its choices of precompressed variant, with what their
/// responses need made once: bytes, validators and header fields, keyed by the request path's remainder
/// as written.
///
/// A kept file is used only while its path still names the very file it was read from: each use checks,
/// with one `stat(2)` on the loop thread (``FileSystem/identity(at:)``), that device, inode, size,
/// modification and change times and mode are the ones `fstat(2)` gave when the bytes were read. A file
/// written, replaced, truncated, `chmod`ed or removed since is a miss, and its request goes the whole way
/// (the work pool, the checks of the root); a path whose component became a link to another file leads
/// to another inode, a miss too. So the bytes sent are the file's as of that `stat`, as they would be
/// read; the `stat` costs what the path's lookup in the kernel does, with no open, read or close.
///
/// A request that takes a precompressed variant is answered from the path's ``Record`` when the `stat`
/// of the file itself and of each variant path ranked at or above the chosen one (by the request's
/// `Accept-Encoding`, the route's order breaking ties) finds what the record holds: the variant's file
/// unchanged, and a variant recorded as absent still absent (or the same non-file). So a `file.br` that
/// appears is seen by the next request that would prefer it, and one that vanishes or changes is a miss;
/// variants ranked below the chosen one are not looked at, as their presence would not change the choice.
///
/// It holds at most ``pathLimit`` paths (each with its file and its variants, each of at most
/// ``sizeLimit`` bytes); when full, the clock's hand drops a path not used since it last passed (second chance:
/// an approximation of the least recently used, with one flag a path and no list to reorder on a hit).
///
/// Safe from any thread: one lock around the table, held for a lookup or an update only (the loops a
/// route answers on share it; uncontended, the lock is two atomic operations a request).
final class HTTPFileCache: Sendable {
    /// The most paths held.
    let pathLimit: Int
    /// The largest file held.
    let sizeLimit: Int

    init(pathLimit: Int, sizeLimit: Int) {
        self.pathLimit = pathLimit
        self.sizeLimit = sizeLimit
    }

    /// One file (the path's own, or one of its variants), as it was read.
    final class Entry: Sendable {
        /// The file's path, checked at each use.
        let path: String
        /// What the path's file was when its bytes were read.
        let identity: FileIdentity
        /// What `fstat(2)` told then.
        let info: FileInfo
        /// The file's bytes.
        let contents: Bytes
        /// The name of the file served (for its content type: a variant's is its file's).
        let name: Substring
        /// The coding of a variant; nil for the file itself.
        let coding: HTTPContentCoding?
        /// Its `ETag`, `Last-Modified` and the route's own fields.
        let validators: HTTPFileServer.Validators
        /// The fields of a whole `200`: the validators', `Accept-Ranges`, `Content-Type` and a variant's
        /// `Content-Encoding` (the server frames the body of bytes with its `Content-Length`).
        let wholeFields: HTTPFields
        /// Their HTTP/1 lines, made once (``HTTPEncodedFields``).
        let wholeFieldLines: HTTPEncodedFields

        init(path: String, identity: FileIdentity, info: FileInfo, contents: Bytes, name: Substring, coding: HTTPContentCoding?,
             validators: HTTPFileServer.Validators, contentType: String) {
            self.path = path
            self.identity = identity
            self.info = info
            self.contents = contents
            self.name = name
            self.coding = coding
            self.validators = validators
            var fields = validators.fields
            fields[.acceptRanges] = "bytes"
            if let coding { fields[.contentEncoding] = coding.token }
            fields[.contentType] = contentType
            wholeFields = fields
            wholeFieldLines = HTTPEncodedFields(fields)
        }

        /// Whether the path names this very file still (one `stat(2)`). Blocks briefly; loop thread.
        var isCurrent: Bool { FileSystem.identity(at: path) == identity }
    }

    /// What was found at a variant's path.
    enum Variant: Sendable {
        /// No variant: nothing there (nil), or something that is not a regular file (its identity).
        case absent(FileIdentity?)
        /// The variant, read whole.
        case present(Entry)
    }

    /// What is kept of one path.
    struct Record: Sendable {
        /// The file's own bytes, when it is small and was read whole for a request taking no variant.
        var plain: Entry?
        /// The identity of the file when its variants were looked at: they are used while it is the same.
        var base: FileIdentity?
        /// The file's path.
        let path: String
        /// The paths of the variants (`file.br`…), in the route's order.
        let variantPaths: [String]
        /// What each variant path held, in the route's order; nil where not looked at.
        var variants: [Variant?]
    }

    /// A record's place in the table: a reference, so that a hit marks it used and reads its plain entry
    /// with no copy of the record and no check of an array's uniqueness. Only touched under the table's lock.
    private final class Slot {
        let key: Substring
        var record: Record
        /// Whether it was used since the clock's hand last passed it (or since it was made: a new record
        /// is the first the hand may drop, unless used before the hand comes to it).
        var used = false

        init(key: Substring, record: Record) {
            self.key = key
            self.record = record
        }
    }

    private struct Table: ~Copyable {
        /// The records' slots, which the clock's hand goes round.
        var slots: [Slot] = []
        /// Each key's slot.
        var index: [Substring: Slot] = [:]
        /// The next slot the clock's hand looks at.
        var hand = 0
    }

    private let table = Lock(Table())

    /// The plain entry for `key`, if any, marked used (not checked: see ``Entry/isCurrent``).
    func entry(for key: Substring) -> Entry? {
        table.withLock { table in
            guard let slot = table.index[key] else { return nil }
            slot.used = true
            return slot.record.plain
        }
    }

    /// The record of `key`, if any, marked used (not checked).
    func record(for key: Substring) -> Record? {
        table.withLock { table in
            guard let slot = table.index[key] else { return nil }
            slot.used = true
            return slot.record
        }
    }

    /// Updates the record of `key` (made for `paths` when there is none, dropping another one when full)
    /// with `change`.
    func update(_ key: Substring, paths: @autoclosure () -> (path: String, variants: [String]), _ change: (inout Record) -> Void) {
        table.withLock { table in
            if let slot = table.index[key] {
                change(&slot.record)
                return
            }
            let paths = paths()
            var record = Record(plain: nil, base: nil, path: paths.path, variantPaths: paths.variants,
                                variants: Array(repeating: nil, count: paths.variants.count))
            change(&record)
            let key = Substring(String(key))  // its own storage, not the request's
            let slot = Slot(key: key, record: record)
            table.index[key] = slot
            guard table.slots.count >= pathLimit else {
                table.slots.append(slot)
                return
            }
            // The clock: the first slot from the hand not used since the hand last passed it, the used ones
            // passed over cleared on the way (at most one full turn).
            while table.slots[table.hand].used {
                table.slots[table.hand].used = false
                table.hand = (table.hand + 1) % table.slots.count
            }
            let victim = table.hand
            table.index[table.slots[victim].key] = nil
            table.slots[victim] = slot
            table.hand = (victim + 1) % table.slots.count
        }
    }

    /// Drops the plain entry of `key` when it is `entry` (and not one that replaced it meanwhile).
    func remove(_ key: Substring, ifItIs entry: Entry) {
        table.withLock { table in
            guard let slot = table.index[key], slot.record.plain === entry else { return }
            slot.record.plain = nil
        }
    }

    /// How many files it holds, variants included (for tests).
    var count: Int {
        table.withLock { table in
            table.slots.reduce(0) { count, slot in
                count + (slot.record.plain == nil ? 0 : 1) + slot.record.variants.reduce(0) { count, variant in
                    if case .present = variant { return count + 1 }
                    return count
                }
            }
        }
    }

    /// How many paths it holds (for tests).
    var pathCount: Int { table.withLock { $0.slots.count } }
}
