/// The lines of an asynchronous sequence of ``Bytes`` chunks, as `String`s: split at each `\n` (a `\r`
/// before it dropped too), however the chunks cut them; the last line comes without a newline when the
/// stream ends after it. A line longer than the limit throws ``NetError/lineTooLong(limit:)`` rather than grow
/// without bound. Invalid UTF-8 is repaired (U+FFFD), as `String(decoding:as:)` does.
///
/// ```swift
/// let child = try ChildProcess.spawn("/usr/bin/make", arguments: ["-k"], on: loop)
/// for try await line in child.standardOutput!.inbound.lines() { log.info("\(line)") }
/// ```
///
/// What the chunks' sequence promises holds here: for a connection's ``Connection/inbound``, iterate on
/// its loop's thread; its backpressure is kept (the next chunk is asked for only when the lines so far are
/// taken). The counterpart of swift-subprocess's `lines()`, NIO's `LineBasedFrameDecoder` and Node's
/// `readline`.
public struct ByteLines<Base: AsyncSequence>: AsyncSequence where Base.Element == Bytes, Base.Failure == NetError {
    public typealias Element = String
    public typealias Failure = NetError

    let base: Base
    let maxLength: Int

    /// Makes the iterator.
    public func makeAsyncIterator() -> Iterator { Iterator(base: base.makeAsyncIterator(), maxLength: maxLength) }

    /// Reads the next line.
    public struct Iterator: AsyncIteratorProtocol {
        public typealias Element = String
        public typealias Failure = NetError

        var base: Base.AsyncIterator
        let maxLength: Int
        /// Bytes of lines not yet handed out, from `start`.
        var pending: [UInt8] = []
        var start = 0
        var ended = false

        /// The next line without its newline, or nil once the stream has ended and every line was given.
        /// - Throws: ``NetError/lineTooLong(limit:)``; what the chunks' sequence throws.
        public mutating func next() async throws(NetError) -> String? {
            try await next(isolation: #isolation)
        }

        /// The next line without its newline, or nil once the stream has ended and every line was given.
        /// - Throws: ``NetError/lineTooLong(limit:)``; what the chunks' sequence throws.
        public mutating func next(isolation actor: isolated (any Actor)?) async throws(NetError) -> String? {
            var searched = start
            while true {
                if let newline = pending[searched...].firstIndex(of: UInt8(ascii: "\n")) {
                    var end = newline
                    if end > start, pending[end - 1] == UInt8(ascii: "\r") { end -= 1 }
                    guard end - start <= maxLength else { throw .lineTooLong(limit: maxLength) }
                    let line = String(decoding: pending[start..<end], as: UTF8.self)
                    start = newline + 1
                    if start == pending.count {
                        pending.removeAll(keepingCapacity: true)
                        start = 0
                    }
                    return line
                }
                guard pending.count - start <= maxLength else { throw .lineTooLong(limit: maxLength) }
                if ended {
                    guard start < pending.count else { return nil }
                    let line = String(decoding: pending[start...], as: UTF8.self)
                    pending.removeAll()
                    start = 0
                    return line
                }
                if start > 0 {  // keep only the partial line before reading more
                    pending.removeFirst(start)
                    start = 0
                }
                searched = pending.count
                guard let chunk = try await base.next(isolation: actor) else {
                    ended = true
                    continue
                }
                chunk.withUnsafeBytes { pending.append(contentsOf: $0) }
            }
        }
    }
}

extension AsyncSequence where Element == Bytes, Failure == NetError {
    /// The sequence's bytes as lines; see ``ByteLines``.
    ///
    /// - Parameter maxLength: The longest line taken, in bytes without its newline (64 KiB by default).
    public func lines(maxLength: Int = 64 * 1024) -> ByteLines<Self> {
        precondition(maxLength > 0, "lines(maxLength:) needs a positive length, got \(maxLength)")
        return ByteLines(base: self, maxLength: maxLength)
    }
}
