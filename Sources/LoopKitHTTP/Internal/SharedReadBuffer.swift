/// One read buffer per loop, shared by that loop's socket transports.
///
/// A connection with nothing left over reads into this buffer and its connection parses the bytes there,
/// in place; only what the parse leaves unconsumed (a request cut in the middle) is copied into a buffer
/// of the connection's own, which goes away again once consumed. So an idle keep-alive connection holds
/// no read buffer at all, and a connection reads up to the whole shared capacity in one system call.
///
/// Loop-confined: one loop's transports use it, one read at a time, on the loop's thread.
final class SharedReadBuffer {
    let base: UnsafeMutableRawPointer
    let capacity: Int

    init(capacity: Int = 64 * 1024) {
        self.capacity = capacity
        base = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 16)
    }

    deinit { base.deallocate() }
}
