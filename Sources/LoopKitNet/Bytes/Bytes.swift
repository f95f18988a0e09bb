/// An immutable run of bytes with cheap slicing: what a connection reads and can write without copying.
///
/// `Bytes` behaves like `[UInt8]` (a random-access collection of `UInt8`, comparable with `==`, built
/// from an array literal or any byte sequence) but its storage is shared, never mutated, and slices of
/// it are `Bytes` too, so passing a chunk around or taking a prefix costs no copy. Like `ArraySlice`,
/// a slice keeps its parent's indices: use `startIndex`, not 0.
///
/// Reading from a connection's `inbound` copies the bytes once, from the read buffer into a new `Bytes`;
/// writing a `Bytes` to a connection queues its storage by reference (no copy) until it is sent.
///
/// **The one owned byte type.** Every public signature of LoopKitNet, LoopKitHTTP and LoopKitHTTPTesting
/// that hands over or takes bytes to keep uses `Bytes`: a connection's reads and writes, a datagram, a
/// file's chunks, a process's output, a peer certificate, a request or response body, a binary WebSocket
/// message. Chosen by measurement (issue 30): a response body queued by reference costs fewer
/// instructions than one copied into the write batch from 2 KiB up. Bytes lent only for the length of a
/// callback (a read handler's input, `write(reservingCapacity:)`'s output space) are
/// `UnsafeRawBufferPointer`s, valid inside that call only.
///
/// A plain value; safe from any thread.
public struct Bytes: Sendable {
    /// The shared storage; nil for an empty value.
    @usableFromInline let storage: Storage?
    @usableFromInline let lower: Int
    @usableFromInline let upper: Int

    /// Heap storage for the bytes: written once when created, immutable after.
    ///
    /// The unchecked conformance stands for that rule: the memory is initialised inside the initialiser
    /// and only ever read afterwards, so sharing it between threads needs no synchronisation.
    @usableFromInline
    final class Storage: @unchecked Sendable {  // immutable once made: its bytes are written before it is shared
        @usableFromInline let base: UnsafeMutableRawPointer
        let capacity: Int

        init(capacity: Int) {
            self.capacity = capacity
            base = UnsafeMutableRawPointer.allocate(byteCount: Swift.max(capacity, 1), alignment: 16)
        }

        deinit { base.deallocate() }
    }

    /// Empty bytes.
    public init() {
        storage = nil
        lower = 0
        upper = 0
    }

    @usableFromInline
    init(storage: Storage?, lower: Int, upper: Int) {
        self.storage = storage
        self.lower = lower
        self.upper = upper
    }

    /// Copies the bytes of `buffer`.
    public init(copying buffer: UnsafeRawBufferPointer) {
        guard buffer.count > 0, let source = buffer.baseAddress else { self.init(); return }
        let storage = Storage(capacity: buffer.count)
        storage.base.copyMemory(from: source, byteCount: buffer.count)
        self.init(storage: storage, lower: 0, upper: buffer.count)
    }

    /// Copies a sequence of bytes (an array, a string's `utf8` view, …).
    public init<Source: Sequence<UInt8>>(_ bytes: Source) {
        if let done = bytes.withContiguousStorageIfAvailable({ Bytes(copying: UnsafeRawBufferPointer($0)) }) {
            self = done
        } else {
            self = Array(bytes).withUnsafeBytes { Bytes(copying: $0) }
        }
    }

    /// The UTF-8 bytes of `string`.
    public init(_ string: String) {
        var string = string
        self = string.withUTF8 { Bytes(copying: UnsafeRawBufferPointer($0)) }
    }

    /// Creates bytes by letting `initializer` write up to `capacity` bytes into fresh storage.
    ///
    /// - Parameters:
    ///   - capacity: The most bytes `initializer` may write.
    ///   - initializer: Writes the bytes at the start of the buffer and returns how many it wrote.
    public init<Failure: Error>(
        unsafeUninitializedCapacity capacity: Int,
        initializingWith initializer: (UnsafeMutableRawBufferPointer) throws(Failure) -> Int
    ) throws(Failure) {
        guard capacity > 0 else { self.init(); return }
        let storage = Storage(capacity: capacity)
        let count = try initializer(UnsafeMutableRawBufferPointer(start: storage.base, count: capacity))
        precondition((0...capacity).contains(count), "Bytes: initializer reported \(count) bytes for capacity \(capacity)")
        self.init(storage: count == 0 ? nil : storage, lower: 0, upper: count)
    }

    /// Calls `body` with the bytes, contiguous in memory. The pointer is valid only inside `body`.
    @inlinable
    public func withUnsafeBytes<Result, Failure: Error>(
        _ body: (UnsafeRawBufferPointer) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        guard let storage else { return try body(UnsafeRawBufferPointer(start: nil, count: 0)) }
        return try withExtendedLifetime(storage) { () throws(Failure) -> Result in
            try body(UnsafeRawBufferPointer(start: storage.base + lower, count: upper - lower))
        }
    }

    /// Calls `body` with the bytes as a `Span` (safe, bounds-checked, non-escaping access with no copy).
    ///
    /// - Parameter body: Reads the bytes; the span cannot outlive the call.
    /// - Returns: What `body` returns.
    @inlinable
    public func withSpan<Result, Failure: Error>(
        _ body: (Span<UInt8>) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        try withUnsafeBytes { (raw) throws(Failure) -> Result in
            try body(raw.assumingMemoryBound(to: UInt8.self).span)
        }
    }

    /// Calls `body` with the bytes as a `RawSpan` (for loading integers and other trivial values at byte
    /// offsets, bounds-checked, with no copy).
    ///
    /// - Parameter body: Reads the bytes; the span cannot outlive the call.
    /// - Returns: What `body` returns.
    @inlinable
    public func withRawSpan<Result, Failure: Error>(
        _ body: (RawSpan) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        try withUnsafeBytes { (raw) throws(Failure) -> Result in try body(raw.bytes) }
    }

    /// The bytes as a string, decoding UTF-8 (invalid sequences become U+FFFD).
    public var utf8String: String {
        withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
    }
}

extension Bytes: RandomAccessCollection {
    public typealias Index = Int
    public typealias Element = UInt8
    public typealias SubSequence = Bytes
    public typealias Indices = Range<Int>

    /// The position of the first byte (not necessarily 0 in a slice).
    @inlinable public var startIndex: Int { lower }
    /// The position one past the last byte.
    @inlinable public var endIndex: Int { upper }
    /// The number of bytes.
    @inlinable public var count: Int { upper - lower }
    /// The valid indices.
    @inlinable public var indices: Range<Int> { lower..<upper }

    /// The byte at `position`.
    @inlinable public subscript(position: Int) -> UInt8 {
        precondition(position >= lower && position < upper, "Bytes: index \(position) out of range \(lower)..<\(upper)")
        return storage!.base.load(fromByteOffset: position, as: UInt8.self)
    }

    /// The bytes in `bounds`, sharing this value's storage (no copy).
    @inlinable public subscript(bounds: Range<Int>) -> Bytes {
        precondition(bounds.lowerBound >= lower && bounds.upperBound <= upper, "Bytes: range \(bounds) out of range \(lower)..<\(upper)")
        return Bytes(storage: bounds.isEmpty ? nil : storage, lower: bounds.lowerBound, upper: bounds.upperBound)
    }

    @inlinable public func withContiguousStorageIfAvailable<Result>(
        _ body: (UnsafeBufferPointer<UInt8>) throws -> Result
    ) rethrows -> Result? {
        try withUnsafeBytes { raw in try body(raw.bindMemory(to: UInt8.self)) }
    }
}

extension Bytes: Hashable {
    /// Whether both hold the same bytes.
    public static func == (lhs: Bytes, rhs: Bytes) -> Bool {
        guard lhs.count == rhs.count else { return false }
        return lhs.withUnsafeBytes { left in rhs.withUnsafeBytes { right in left.elementsEqual(right) } }
    }

    /// Hashes the bytes.
    public func hash(into hasher: inout Hasher) {
        withUnsafeBytes { hasher.combine(bytes: $0) }
    }
}

extension Bytes: ExpressibleByArrayLiteral {
    /// Bytes from an array literal: `[0x68, 0x69]`.
    public init(arrayLiteral elements: UInt8...) { self.init(elements) }
}

extension Bytes: CustomStringConvertible {
    /// The byte count and the first bytes in hex.
    public var description: String {
        let head = prefix(16).map { byte in
            let hex = String(byte, radix: 16)
            return byte < 16 ? "0" + hex : hex
        }.joined(separator: " ")
        return "Bytes(\(count): \(head)\(count > 16 ? " …" : ""))"
    }
}

extension Bytes {
    /// The address of the first byte (nil when empty), for `writev`: valid while this value (or a copy
    /// of it) lives, since the storage is never mutated or moved.
    var baseAddress: UnsafeMutableRawPointer? { storage.map { $0.base + lower } }
}
