import LoopKit

/// Buffers one loop's connections share, since only one of them reads or writes at a time on the loop's
/// thread: the read buffer every connection with nothing left over reads into, and the write batch.
///
/// **The read buffer** (64 KiB) takes one `read` of up to its size; the connection's handler consumes the
/// bytes in place and only the unconsumed rest is copied into the connection's own ``InputBuffer``.
///
/// **The write batch** collects what a read handler writes while it runs — copies into one growing
/// buffer, ``Bytes`` by reference — and the connection sends it all with one `writev` when the handler
/// returns. What the socket does not take moves into the connection's ``OutputQueue``.
///
/// Loop-confined: one per loop (`EventLoop.localValue`), used on the loop's thread only.
final class LoopIOBuffers {
    /// The shared read buffer.
    let read: UnsafeMutableRawPointer
    /// Its size.
    let readCapacity = 64 * 1024

    /// One write of the batch: a range of the copy buffer, or bytes by reference.
    enum Entry {
        case copied(offset: Int, count: Int)
        case bytes(Bytes)
    }

    /// The connection whose handler is filling the batch, if any.
    private(set) var batchOwner: ObjectIdentifier?
    @exclusivity(unchecked) private(set) var entries: [Entry] = []
    /// Bytes in the batch.
    private(set) var batchCount = 0
    private var copies: UnsafeMutableRawPointer
    private var copiesCapacity = 16 * 1024
    private var copiesUsed = 0

    private init() {
        read = UnsafeMutableRawPointer.allocate(byteCount: readCapacity, alignment: 16)
        copies = UnsafeMutableRawPointer.allocate(byteCount: copiesCapacity, alignment: 16)
        entries.reserveCapacity(16)
    }

    deinit {
        read.deallocate()
        copies.deallocate()
    }

    /// The buffers of `loop`, made the first time. Call on the loop's thread.
    static func of(_ loop: EventLoop) -> LoopIOBuffers {
        loop.localValue(for: ObjectIdentifier(LoopIOBuffers.self)) { LoopIOBuffers() }
    }

    // MARK: The write batch

    /// Starts collecting `owner`'s writes; false when another connection's batch is open (a handler
    /// that makes a second connection read inside its own read callback: that one writes directly).
    func openBatch(for owner: ObjectIdentifier) -> Bool {
        guard batchOwner == nil else { return false }
        batchOwner = owner
        return true
    }

    /// Adds a copy of `buffer`, merging it with the copy before it when they are adjacent.
    func appendCopy(_ buffer: UnsafeRawBufferPointer) {
        guard !buffer.isEmpty else { return }
        appendCopy(capacity: buffer.count) { target in
            target.copyMemory(from: buffer)
            return buffer.count
        }
    }

    /// Lets `body` write up to `capacity` bytes into the batch's copy buffer; keeps what it reports.
    func appendCopy(capacity: Int, _ body: (UnsafeMutableRawBufferPointer) -> Int) {
        if copiesCapacity - copiesUsed < capacity {
            let grown = Swift.max(copiesCapacity * 2, copiesUsed + capacity)
            let buffer = UnsafeMutableRawPointer.allocate(byteCount: grown, alignment: 16)
            buffer.copyMemory(from: copies, byteCount: copiesUsed)
            copies.deallocate()
            copies = buffer
            copiesCapacity = grown
        }
        let written = body(UnsafeMutableRawBufferPointer(start: copies + copiesUsed, count: capacity))
        precondition(written >= 0 && written <= capacity, "LoopKitNet: wrote \(written) bytes into \(capacity)")
        guard written > 0 else { return }
        if case .copied(let offset, let count)? = entries.last, offset + count == copiesUsed {
            entries[entries.count - 1] = .copied(offset: offset, count: count + written)
        } else {
            entries.append(.copied(offset: copiesUsed, count: written))
        }
        copiesUsed += written
        batchCount += written
    }

    /// Adds `bytes` by reference.
    func append(_ bytes: Bytes) {
        guard !bytes.isEmpty else { return }
        entries.append(.bytes(bytes))
        batchCount += bytes.count
    }

    /// Lends the batch as `iovec`s (up to ``OutputQueue/maxVectors``) to `send`, which returns how many
    /// bytes went out; then hands every byte that did not go out to `keep`, as ``Bytes``, and closes the
    /// batch.
    func closeBatch(send: (UnsafePointer<iovec>, Int) -> Int, keep: (Bytes) -> Void) {
        defer {
            // Often empty (async readers write later), often one or two entries (a response's head and
            // body): removed one by one, as `removeAll(keepingCapacity:)` goes through a generic
            // `replaceSubrange` of about 150 instructions.
            if entries.count <= 4 && entries.capacity <= 256 {
                while !entries.isEmpty { entries.removeLast() }
            } else {
                entries.removeAll(keepingCapacity: entries.capacity <= 256)
            }
            batchCount = 0
            copiesUsed = 0
            batchOwner = nil
            if copiesCapacity > 256 * 1024 {  // a burst: give the memory back
                copies.deallocate()
                copiesCapacity = 16 * 1024
                copies = UnsafeMutableRawPointer.allocate(byteCount: copiesCapacity, alignment: 16)
            }
        }
        guard batchCount > 0 else { return }
        let vectors = Swift.min(entries.count, OutputQueue.maxVectors)
        let sent = withUnsafeTemporaryAllocation(of: iovec.self, capacity: vectors) { iov in
            for index in 0..<vectors {
                switch entries[index] {
                case .copied(let offset, let count): iov[index] = iovec(iov_base: copies + offset, iov_len: count)
                case .bytes(let bytes): iov[index] = iovec(iov_base: bytes.baseAddress, iov_len: bytes.count)
                }
            }
            return send(UnsafePointer(iov.baseAddress!), vectors)
        }
        guard sent < batchCount else { return }
        var skip = sent
        for entry in entries {
            switch entry {
            case .copied(let offset, let count):
                if skip >= count { skip -= count; continue }
                keep(Bytes(copying: UnsafeRawBufferPointer(start: copies + offset + skip, count: count - skip)))
            case .bytes(let bytes):
                if skip >= bytes.count { skip -= bytes.count; continue }
                keep(bytes[(bytes.startIndex + skip)...])
            }
            skip = 0
        }
    }
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
