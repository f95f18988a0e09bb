#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The bytes a connection has written and the socket has not taken yet, in order.
///
/// Chunks are ``Bytes``: a `Bytes` written is queued by reference (no copy), copied writes become one
/// `Bytes` each. Empty, it holds no memory. Sending hands up to ``maxVectors`` chunks to one `writev`.
///
/// Loop-confined, like its connection.
struct OutputQueue {
    private var chunks: [Bytes] = []
    private var head = 0
    /// Bytes queued.
    private(set) var count = 0

    /// The most chunks one `writev` takes.
    static let maxVectors = 64

    /// Whether nothing is queued.
    var isEmpty: Bool { count == 0 }

    /// Queues `bytes` (by reference).
    mutating func append(_ bytes: Bytes) {
        guard !bytes.isEmpty else { return }
        chunks.append(bytes)
        count += bytes.count
    }

    /// Lends up to ``maxVectors`` queued chunks as `iovec`s to `send`, which returns how many bytes it
    /// sent; drops those.
    mutating func send<Result>(_ send: (UnsafePointer<iovec>, Int) -> (sent: Int, result: Result)) -> Result {
        let vectors = Swift.min(chunks.count - head, Self.maxVectors)
        let outcome = withUnsafeTemporaryAllocation(of: iovec.self, capacity: vectors) { iov in
            for index in 0..<vectors {
                let chunk = chunks[head + index]
                iov[index] = iovec(iov_base: chunk.baseAddress, iov_len: chunk.count)
            }
            return send(UnsafePointer(iov.baseAddress!), vectors)
        }
        removeFirst(outcome.sent)
        return outcome.result
    }

    /// Drops the first `sent` bytes.
    mutating func removeFirst(_ sent: Int) {
        var left = sent
        count -= sent
        while left > 0 {
            let chunk = chunks[head]
            if chunk.count <= left {
                left -= chunk.count
                chunks[head] = Bytes()
                head += 1
            } else {
                chunks[head] = chunk[(chunk.startIndex + left)...]
                left = 0
            }
        }
        if head == chunks.count {
            chunks.removeAll(keepingCapacity: chunks.capacity <= 16)
            head = 0
        } else if head >= 64 {
            chunks.removeFirst(head)
            head = 0
        }
    }

    /// Drops everything.
    mutating func removeAll() {
        chunks = []
        head = 0
        count = 0
    }
}
