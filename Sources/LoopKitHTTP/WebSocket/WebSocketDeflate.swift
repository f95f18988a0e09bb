import CZlib

/// permessage-deflate's compressor (RFC 7692 §7.2.1) on zlib: raw deflate, each message flushed with
/// `Z_SYNC_FLUSH` and its trailing `00 00 FF FF` removed; the window is kept between messages unless
/// `noContextTakeover`.
///
/// Loop-confined (held by one socket's engine); the zlib calls of LoopKitHTTP live in this file.
final class WebSocketDeflater {
    private let stream = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)
    private let noContextTakeover: Bool
    private var scratch = [UInt8](repeating: 0, count: 16 * 1024)

    /// A compressor with a window of 2^`windowBits` bytes (9–15).
    ///
    /// The corresponding zlib call is `deflateInit2`.
    init(windowBits: Int, noContextTakeover: Bool) {
        stream.initialize(to: z_stream())
        self.noContextTakeover = noContextTakeover
        let result = loopkit_deflateInit2(stream, Z_DEFAULT_COMPRESSION, -Int32(windowBits), 8)
        precondition(result == Z_OK, "zlib refused deflateInit2 (\(result))")
    }

    deinit {
        deflateEnd(stream)
        stream.deinitialize(count: 1)
        stream.deallocate()
    }

    /// The compressed payload of a message.
    ///
    /// The corresponding zlib calls are `deflate` with `Z_SYNC_FLUSH` and `deflateReset`.
    func compress(_ input: UnsafeRawBufferPointer) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(input.count / 2 + 16)
        stream.pointee.next_in = UnsafeMutablePointer(mutating: input.baseAddress?.assumingMemoryBound(to: UInt8.self))
        stream.pointee.avail_in = UInt32(input.count)
        repeat {
            let produced = scratch.withUnsafeMutableBufferPointer { out -> Int in
                stream.pointee.next_out = out.baseAddress
                stream.pointee.avail_out = UInt32(out.count)
                let result = deflate(stream, Z_SYNC_FLUSH)
                precondition(result == Z_OK || result == Z_BUF_ERROR, "zlib deflate failed (\(result))")
                return out.count - Int(stream.pointee.avail_out)
            }
            output.append(contentsOf: scratch[..<produced])
        } while stream.pointee.avail_in > 0 || stream.pointee.avail_out == 0
        if output.count >= 4, output.suffix(4).elementsEqual([0x00, 0x00, 0xFF, 0xFF]) { output.removeLast(4) }
        // Nothing to flush (an empty message after a flush): zlib writes nothing, but the peer appends
        // `00 00 FF FF` to whatever arrives, and those four bytes alone start a stored block its next message
        // breaks. Send the single 0x00 byte RFC 7692 §7.2.3.6 gives for an empty message: with the tail, an
        // empty stored block.
        if output.isEmpty { output = [0x00] }
        if noContextTakeover { deflateReset(stream) }
        return output
    }
}

/// permessage-deflate's decompressor (RFC 7692 §7.2.2) on zlib: a message's frames are inflated as they
/// arrive, then `00 00 FF FF` at its end; the output is limited (1009 past it). It always uses a
/// 2^15-byte window, which reads what any smaller window wrote.
///
/// Loop-confined (held by one socket's engine).
final class WebSocketInflater {
    private let stream = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)
    private let noContextTakeover: Bool
    private var scratch = [UInt8](repeating: 0, count: 16 * 1024)

    /// A decompressor; `noContextTakeover` resets it after each message (the client promised it).
    ///
    /// The corresponding zlib call is `inflateInit2`.
    init(noContextTakeover: Bool) {
        stream.initialize(to: z_stream())
        self.noContextTakeover = noContextTakeover
        let result = loopkit_inflateInit2(stream, -15)
        precondition(result == Z_OK, "zlib refused inflateInit2 (\(result))")
    }

    deinit {
        inflateEnd(stream)
        stream.deinitialize(count: 1)
        stream.deallocate()
    }

    /// Inflates the next piece of a message onto `output`, which may not grow past `limit` bytes.
    ///
    /// - Throws: 1007 for data that is not deflate, 1009 past `limit`.
    ///
    /// The corresponding zlib call is `inflate` with `Z_SYNC_FLUSH`.
    func inflate(_ input: UnsafeRawBufferPointer, into output: inout [UInt8], limit: Int) throws(WebSocketViolation) {
        guard !input.isEmpty else { return }
        stream.pointee.next_in = UnsafeMutablePointer(mutating: input.baseAddress?.assumingMemoryBound(to: UInt8.self))
        stream.pointee.avail_in = UInt32(input.count)
        while true {
            let (result, produced) = scratch.withUnsafeMutableBufferPointer { out -> (Int32, Int) in
                stream.pointee.next_out = out.baseAddress
                stream.pointee.avail_out = UInt32(out.count)
                let result = CZlib.inflate(stream, Z_SYNC_FLUSH)
                return (result, out.count - Int(stream.pointee.avail_out))
            }
            switch result {
            case Z_OK, Z_BUF_ERROR:
                break
            case Z_STREAM_END:  // a final block: the next message starts a new stream
                inflateReset(stream)
            default:
                throw .invalidUTF8("invalid compressed data")
            }
            guard output.count + produced <= limit else { throw .tooBig("message larger than \(limit) bytes") }
            output.append(contentsOf: scratch[..<produced])
            if produced == 0 && (result == Z_BUF_ERROR || stream.pointee.avail_in == 0) { return }
            if stream.pointee.avail_in == 0 && stream.pointee.avail_out != 0 { return }
        }
    }

    /// The message ended: inflate the `00 00 FF FF` RFC 7692 removed from it.
    func finishMessage(into output: inout [UInt8], limit: Int) throws(WebSocketViolation) {
        let tail: [UInt8] = [0x00, 0x00, 0xFF, 0xFF]
        try tail.withUnsafeBytes { bytes in
            Result { () throws(WebSocketViolation) in try inflate(bytes, into: &output, limit: limit) }
        }.get()
        if noContextTakeover { inflateReset(stream) }
    }
}
