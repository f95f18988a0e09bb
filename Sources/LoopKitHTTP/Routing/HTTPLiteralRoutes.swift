import HTTPTypes
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The router's literal routes (no parameter: `GET /hello`), found by method and path bytes: an
/// open-addressing table hashed with FNV-1a over the bytes, compared by hash, length and `memcmp`.
///
/// A `Dictionary` keyed by strings costs a SipHash and a Unicode-aware hash of the path per lookup (about
/// 500 instructions for `/hello`); this costs a byte loop and one comparison. A value; built while routes are
/// added, read-only while serving.
struct HTTPLiteralRoutes: Sendable {
    private struct Entry: Sendable {
        var hash: UInt64
        var method: String
        var path: [UInt8]
        var route: Int
    }

    private var entries: [Entry] = []
    /// Slots of `entries` (-1: empty), a power of two at least twice the entries.
    private var slots: [Int32] = []

    /// The route for `method` and `path` exactly, nil when there is none.
    func route(_ method: HTTPRequest.Method, path: Substring) -> Int? {
        guard !entries.isEmpty else { return nil }
        var path = path
        return path.withUTF8 { bytes in
            let hash = Self.hash(method: method.rawValue, path: bytes)
            // Read in place: a copied entry would retain its method and path.
            return entries.withUnsafeBufferPointer { entries in
                slots.withUnsafeBufferPointer { slots in
                    let mask = slots.count - 1
                    var slot = Int(truncatingIfNeeded: hash) & mask
                    while true {
                        let index = Int(slots[slot])
                        guard index >= 0 else { return nil }
                        if entries[index].hash == hash, entries[index].path.count == bytes.count,
                           entries[index].method == method.rawValue,
                           bytes.isEmpty || entries[index].path.withUnsafeBufferPointer({ memcmp($0.baseAddress!, bytes.baseAddress!, bytes.count) == 0 }) {
                            return entries[index].route
                        }
                        slot = (slot + 1) & mask
                    }
                }
            }
        }
    }

    /// Adds `route` for `method` and `path` unless one is there already (the first added wins).
    mutating func add(_ method: HTTPRequest.Method, path: String, route: Int) {
        guard self.route(method, path: path[...]) == nil else { return }
        let bytes = Array(path.utf8)
        let hash = bytes.withUnsafeBufferPointer { Self.hash(method: method.rawValue, path: $0) }
        entries.append(Entry(hash: hash, method: method.rawValue, path: bytes, route: route))
        if slots.count < entries.count * 2 {
            rehash(capacity: max(16, entries.count * 4))
        } else {
            insert(entries.count - 1)
        }
    }

    private mutating func rehash(capacity: Int) {
        var size = 1
        while size < capacity { size <<= 1 }
        slots = Array(repeating: -1, count: size)
        for index in entries.indices { insert(index) }
    }

    private mutating func insert(_ index: Int) {
        let mask = slots.count - 1
        var slot = Int(truncatingIfNeeded: entries[index].hash) & mask
        while slots[slot] >= 0 { slot = (slot + 1) & mask }
        slots[slot] = Int32(index)
    }

    /// FNV-1a of the path's bytes, then of the method's length and first byte (the methods of one path are few).
    @inline(__always)
    private static func hash(method: String, path: UnsafeBufferPointer<UInt8>) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in path {
            hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3
        }
        hash = (hash ^ UInt64(method.utf8.count)) &* 0x100_0000_01b3
        hash = (hash ^ UInt64(method.utf8.first ?? 0)) &* 0x100_0000_01b3
        return hash ^ (hash >> 29)
    }
}
