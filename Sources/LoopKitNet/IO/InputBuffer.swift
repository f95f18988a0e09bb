/// The bytes a connection has received and not consumed yet, in a buffer of its own.
///
/// Empty most of the time: a connection with nothing left over reads into its loop's shared buffer
/// (``LoopIOBuffers``) and its handler consumes the bytes there. Only bytes left unconsumed (a request
/// cut in the middle, a reader that is not asking) come here; later reads extend them, and the buffer
/// is freed once everything in it is consumed, so an idle connection holds no read buffer at all.
///
/// Loop-confined, like its connection.
struct InputBuffer: ~Copyable {
    private var base: UnsafeMutableRawPointer?
    private var capacity = 0
    private var start = 0
    private var end = 0

    /// The least the buffer grows by.
    static let growth = 4096

    init() {}

    deinit { base?.deallocate() }

    /// Bytes held.
    var count: Int { end - start }

    /// Whether nothing is held.
    var isEmpty: Bool { end == start }

    /// The bytes held, borrowed: valid until the buffer next changes.
    var bytes: UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: base.map { $0 + start }, count: end - start)
    }

    /// Appends a copy of `bytes`.
    mutating func append(_ bytes: UnsafeRawBufferPointer) {
        guard !bytes.isEmpty else { return }
        reserve(bytes.count)
        (base! + end).copyMemory(from: bytes.baseAddress!, byteCount: bytes.count)
        end += bytes.count
    }

    /// Lets `fill` write up to `count` bytes behind what is held (a read from the socket), keeping what
    /// it reports written. `fill` returns the count written, or nil when it wrote nothing.
    mutating func append<Result>(upTo count: Int, _ fill: (UnsafeMutableRawPointer, Int) -> (written: Int, result: Result)) -> Result {
        reserve(count)
        let outcome = fill(base! + end, count)
        end += outcome.written
        if isEmpty { release() }
        return outcome.result
    }

    /// Drops the first `count` bytes (consumed); frees the buffer once it is empty.
    mutating func removeFirst(_ count: Int) {
        start += count
        if start == end { release() }
    }

    /// Drops everything and frees the buffer.
    mutating func release() {
        base?.deallocate()
        base = nil
        capacity = 0
        start = 0
        end = 0
    }

    /// Makes room for `count` more bytes at the end: compacts first, then grows.
    private mutating func reserve(_ count: Int) {
        if capacity - end >= count { return }
        let held = end - start
        if start > 0, let base {
            if held > 0 { base.copyMemory(from: base + start, byteCount: held) }
            start = 0
            end = held
            if capacity - end >= count { return }
        }
        let grown = Swift.max(capacity * 2, held + Swift.max(count, Self.growth))
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: grown, alignment: 16)
        if let base {
            buffer.copyMemory(from: base, byteCount: held)
            base.deallocate()
        }
        base = buffer
        capacity = grown
    }
}
