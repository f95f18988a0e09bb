import CBrotli
import CZlib
import CZstd
import LoopKitNet

// The C boundary of the content codings (gzip on zlib, br on Brotli, zstd on Zstandard): every call into
// those libraries for response compression and request decompression is in this file. Each coder streams
// through a fixed 16 KiB output buffer, copied out into `Bytes` as it fills, so its memory is bounded
// whatever the input.

/// A streaming compressor of one content coding, for one body. Loop-confined (one response's body).
protocol HTTPContentEncoder: AnyObject {
    /// Compresses `input` and appends what comes out to `output`; with `flush`, everything given so far
    /// comes out (a client can decode it all now: an event of an event stream).
    func encode(_ input: UnsafeRawBufferPointer, flush: Bool, into output: inout [Bytes])
    /// Ends the stream: the rest of the output and the coding's trailer.
    func finish(into output: inout [Bytes])
}

/// Why a compressed request body could not be decoded.
enum HTTPContentDecodingFailure: Error, Equatable {
    /// The decoded bytes passed the budget the decoder was given.
    case tooLarge
    /// The data is not of the coding (or is cut short: ``HTTPContentDecoder/finish()``).
    case corrupt
}

/// A streaming decompressor of one content coding, for one body. Loop-confined (one request's body).
protocol HTTPContentDecoder: AnyObject {
    /// Decompresses `input`, appending the output to `output`; throws ``HTTPContentDecodingFailure/tooLarge``
    /// as soon as more than `budget` bytes came out of this call (no more is decoded), or
    /// ``HTTPContentDecodingFailure/corrupt``.
    func decode(_ input: UnsafeRawBufferPointer, budget: Int, into output: inout [Bytes]) throws(HTTPContentDecodingFailure)
    /// The input has ended: throws ``HTTPContentDecodingFailure/corrupt`` unless the stream ended too.
    func finish() throws(HTTPContentDecodingFailure)
}

/// Compression levels of the codings (each library's own scale).
public struct HTTPCompressionLevels: Sendable, Hashable {
    /// zlib's level for gzip, 1 (fastest) to 9 (default 6, zlib's default).
    public var gzip: Int
    /// Brotli's quality, 0 to 11 (default 5: 11 is for static files, far too slow per response).
    public var brotli: Int
    /// Zstandard's level, 1 to 19 (default 3, the library's default).
    public var zstd: Int

    /// Levels; every one has a default.
    public init(gzip: Int = 6, brotli: Int = 5, zstd: Int = 3) {
        self.gzip = gzip
        self.brotli = brotli
        self.zstd = zstd
    }
}

extension HTTPContentCoding {
    /// Whether ``makeEncoder(levels:)`` makes a compressor for this coding.
    var isEncodable: Bool { token == "gzip" || token == "br" || token == "zstd" }

    /// A compressor for this coding, nil for a coding LoopKit does not implement.
    func makeEncoder(levels: HTTPCompressionLevels) -> (any HTTPContentEncoder)? {
        switch token {
        case "gzip": GzipEncoder(level: levels.gzip)
        case "br": BrotliEncoder(quality: levels.brotli)
        case "zstd": ZstdEncoder(level: levels.zstd)
        default: nil
        }
    }

    /// A decompressor for this coding, nil for a coding LoopKit does not implement.
    func makeDecoder() -> (any HTTPContentDecoder)? {
        switch token {
        case "gzip", "x-gzip": GzipDecoder()
        case "br": BrotliDecoder()
        case "zstd": ZstdDecoder()
        default: nil
        }
    }
}

/// The size of each coder's output buffer.
private let outputChunk = 16 * 1024

/// `count` bytes of `scratch` as fresh `Bytes`, appended to `output` (nothing when `count` is 0).
private func emit(_ scratch: UnsafeMutableRawBufferPointer, count: Int, into output: inout [Bytes]) {
    guard count > 0 else { return }
    output.append(Bytes(copying: UnsafeRawBufferPointer(rebasing: scratch[..<count])))
}

// MARK: gzip (zlib)

/// gzip (RFC 1952) on zlib's `deflate`, window 2^15, with `Z_SYNC_FLUSH` for a flush.
final class GzipEncoder: HTTPContentEncoder {
    private let stream = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)
    private let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: outputChunk, alignment: 1)

    /// The corresponding zlib call is `deflateInit2` (window bits 15 + 16: a gzip header and trailer).
    init(level: Int) {
        stream.initialize(to: z_stream())
        let result = loopkit_deflateInit2(stream, Int32(max(1, min(9, level))), 15 + 16, 8)
        precondition(result == Z_OK, "zlib refused deflateInit2 (\(result))")
    }

    deinit {
        deflateEnd(stream)
        stream.deinitialize(count: 1)
        stream.deallocate()
        scratch.deallocate()
    }

    func encode(_ input: UnsafeRawBufferPointer, flush: Bool, into output: inout [Bytes]) {
        run(input, mode: flush ? Z_SYNC_FLUSH : Z_NO_FLUSH, into: &output)
    }

    func finish(into output: inout [Bytes]) {
        run(UnsafeRawBufferPointer(start: nil, count: 0), mode: Z_FINISH, into: &output)
    }

    /// The corresponding zlib call is `deflate`.
    private func run(_ input: UnsafeRawBufferPointer, mode: Int32, into output: inout [Bytes]) {
        stream.pointee.next_in = UnsafeMutablePointer(mutating: input.baseAddress?.assumingMemoryBound(to: UInt8.self))
        stream.pointee.avail_in = UInt32(input.count)
        while true {
            stream.pointee.next_out = scratch.baseAddress?.assumingMemoryBound(to: UInt8.self)
            stream.pointee.avail_out = UInt32(scratch.count)
            let result = deflate(stream, mode)
            precondition(result == Z_OK || result == Z_BUF_ERROR || result == Z_STREAM_END, "zlib deflate failed (\(result))")
            emit(scratch, count: scratch.count - Int(stream.pointee.avail_out), into: &output)
            if mode == Z_FINISH { if result == Z_STREAM_END { return } else { continue } }
            // Done once the input is taken and zlib left room in the buffer (nothing more is pending).
            if stream.pointee.avail_in == 0 && stream.pointee.avail_out > 0 { return }
        }
    }
}

/// gzip's decoder on zlib's `inflate` (a gzip header only; members one after another are read as one).
final class GzipDecoder: HTTPContentDecoder {
    private let stream = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)
    private let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: outputChunk, alignment: 1)
    /// A member ended and no byte of another came yet.
    private var atMemberEnd = false

    /// The corresponding zlib call is `inflateInit2` (window bits 15 + 16: gzip only).
    init() {
        stream.initialize(to: z_stream())
        let result = loopkit_inflateInit2(stream, 15 + 16)
        precondition(result == Z_OK, "zlib refused inflateInit2 (\(result))")
    }

    deinit {
        inflateEnd(stream)
        stream.deinitialize(count: 1)
        stream.deallocate()
        scratch.deallocate()
    }

    /// The corresponding zlib calls are `inflate` and, between members, `inflateReset`.
    func decode(_ input: UnsafeRawBufferPointer, budget: Int, into output: inout [Bytes]) throws(HTTPContentDecodingFailure) {
        guard !input.isEmpty else { return }
        stream.pointee.next_in = UnsafeMutablePointer(mutating: input.baseAddress?.assumingMemoryBound(to: UInt8.self))
        stream.pointee.avail_in = UInt32(input.count)
        var produced = 0
        while stream.pointee.avail_in > 0 || stream.pointee.avail_out == 0 {
            if atMemberEnd {
                guard stream.pointee.avail_in > 0 else { return }
                inflateReset(stream)
                atMemberEnd = false
            }
            stream.pointee.next_out = scratch.baseAddress?.assumingMemoryBound(to: UInt8.self)
            stream.pointee.avail_out = UInt32(scratch.count)
            let result = inflate(stream, Z_NO_FLUSH)
            let count = scratch.count - Int(stream.pointee.avail_out)
            produced += count
            guard produced <= budget else { throw .tooLarge }
            emit(scratch, count: count, into: &output)
            switch result {
            case Z_STREAM_END: atMemberEnd = true
            case Z_OK: break
            case Z_BUF_ERROR where count == 0: return  // needs more input
            case Z_BUF_ERROR: break
            default: throw .corrupt
            }
        }
    }

    func finish() throws(HTTPContentDecodingFailure) {
        guard atMemberEnd else { throw .corrupt }
    }
}

// MARK: br (Brotli)

/// Brotli (RFC 7932) with a 2^19-byte window (512 KiB: a streamed body's encoder stays small), with
/// `BROTLI_OPERATION_FLUSH` for a flush.
final class BrotliEncoder: HTTPContentEncoder {
    private let state: OpaquePointer
    private let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: outputChunk, alignment: 1)

    /// The corresponding Brotli calls are `BrotliEncoderCreateInstance` and `BrotliEncoderSetParameter`.
    init(quality: Int) {
        guard let state = BrotliEncoderCreateInstance(nil, nil, nil) else { fatalError("Brotli could not allocate an encoder") }
        self.state = state
        BrotliEncoderSetParameter(state, BROTLI_PARAM_QUALITY, UInt32(max(0, min(11, quality))))
        BrotliEncoderSetParameter(state, BROTLI_PARAM_LGWIN, 19)
    }

    deinit {
        BrotliEncoderDestroyInstance(state)
        scratch.deallocate()
    }

    func encode(_ input: UnsafeRawBufferPointer, flush: Bool, into output: inout [Bytes]) {
        run(input, operation: flush ? BROTLI_OPERATION_FLUSH : BROTLI_OPERATION_PROCESS, into: &output)
    }

    func finish(into output: inout [Bytes]) {
        run(UnsafeRawBufferPointer(start: nil, count: 0), operation: BROTLI_OPERATION_FINISH, into: &output)
    }

    /// The corresponding Brotli calls are `BrotliEncoderCompressStream`, `BrotliEncoderHasMoreOutput`
    /// and `BrotliEncoderIsFinished`.
    private func run(_ input: UnsafeRawBufferPointer, operation: BrotliEncoderOperation, into output: inout [Bytes]) {
        var availableIn = input.count
        var nextIn = input.baseAddress?.assumingMemoryBound(to: UInt8.self)
        while true {
            var availableOut = scratch.count
            var nextOut: UnsafeMutablePointer<UInt8>? = scratch.baseAddress?.assumingMemoryBound(to: UInt8.self)
            let ok = BrotliEncoderCompressStream(state, operation, &availableIn, &nextIn, &availableOut, &nextOut, nil)
            precondition(ok != 0, "Brotli's encoder failed")
            emit(scratch, count: scratch.count - availableOut, into: &output)
            let pending = BrotliEncoderHasMoreOutput(state) != 0
            if operation == BROTLI_OPERATION_FINISH {
                if BrotliEncoderIsFinished(state) != 0 { return }
            } else if availableIn == 0 && !pending {
                return
            }
        }
    }
}

/// Brotli's decoder.
final class BrotliDecoder: HTTPContentDecoder {
    private let state: OpaquePointer
    private let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: outputChunk, alignment: 1)
    private var ended = false

    /// The corresponding Brotli call is `BrotliDecoderCreateInstance`.
    init() {
        guard let state = BrotliDecoderCreateInstance(nil, nil, nil) else { fatalError("Brotli could not allocate a decoder") }
        self.state = state
    }

    deinit {
        BrotliDecoderDestroyInstance(state)
        scratch.deallocate()
    }

    /// The corresponding Brotli call is `BrotliDecoderDecompressStream`.
    func decode(_ input: UnsafeRawBufferPointer, budget: Int, into output: inout [Bytes]) throws(HTTPContentDecodingFailure) {
        guard !input.isEmpty else { return }
        guard !ended else { throw .corrupt }  // bytes after the end of the stream
        var availableIn = input.count
        var nextIn = input.baseAddress?.assumingMemoryBound(to: UInt8.self)
        var produced = 0
        while true {
            var availableOut = scratch.count
            var nextOut: UnsafeMutablePointer<UInt8>? = scratch.baseAddress?.assumingMemoryBound(to: UInt8.self)
            let result = BrotliDecoderDecompressStream(state, &availableIn, &nextIn, &availableOut, &nextOut, nil)
            let count = scratch.count - availableOut
            produced += count
            guard produced <= budget else { throw .tooLarge }
            emit(scratch, count: count, into: &output)
            switch result {
            case BROTLI_DECODER_RESULT_NEEDS_MORE_OUTPUT: continue
            case BROTLI_DECODER_RESULT_NEEDS_MORE_INPUT: return
            case BROTLI_DECODER_RESULT_SUCCESS:
                ended = true
                if availableIn > 0 { throw .corrupt }
                return
            default: throw .corrupt
            }
        }
    }

    func finish() throws(HTTPContentDecodingFailure) {
        guard ended else { throw .corrupt }
    }
}

// MARK: zstd (Zstandard)

/// Zstandard (RFC 8878) on `ZSTD_compressStream2`, with `ZSTD_e_flush` for a flush.
final class ZstdEncoder: HTTPContentEncoder {
    private let context: OpaquePointer
    private let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: outputChunk, alignment: 1)

    /// The corresponding Zstandard calls are `ZSTD_createCCtx` and `ZSTD_CCtx_setParameter`.
    init(level: Int) {
        guard let context = ZSTD_createCCtx() else { fatalError("Zstandard could not allocate a compression context") }
        self.context = context
        ZSTD_CCtx_setParameter(context, ZSTD_c_compressionLevel, Int32(max(1, min(19, level))))
    }

    deinit {
        ZSTD_freeCCtx(context)
        scratch.deallocate()
    }

    func encode(_ input: UnsafeRawBufferPointer, flush: Bool, into output: inout [Bytes]) {
        run(input, directive: flush ? ZSTD_e_flush : ZSTD_e_continue, into: &output)
    }

    func finish(into output: inout [Bytes]) {
        run(UnsafeRawBufferPointer(start: nil, count: 0), directive: ZSTD_e_end, into: &output)
    }

    /// The corresponding Zstandard call is `ZSTD_compressStream2`.
    private func run(_ input: UnsafeRawBufferPointer, directive: ZSTD_EndDirective, into output: inout [Bytes]) {
        var inBuffer = ZSTD_inBuffer(src: input.baseAddress, size: input.count, pos: 0)
        while true {
            var outBuffer = ZSTD_outBuffer(dst: scratch.baseAddress, size: scratch.count, pos: 0)
            let remaining = ZSTD_compressStream2(context, &outBuffer, &inBuffer, directive)
            precondition(ZSTD_isError(remaining) == 0, "Zstandard's encoder failed")
            emit(scratch, count: outBuffer.pos, into: &output)
            if directive == ZSTD_e_continue {
                if inBuffer.pos == inBuffer.size { return }
            } else if remaining == 0 {
                return
            }
        }
    }
}

/// Zstandard's decoder, its window limited to 2^23 bytes (8 MiB, what RFC 8878 §3.1.1.1.2 asks a
/// decoder to support at least): a frame that asks for more is refused as corrupt.
final class ZstdDecoder: HTTPContentDecoder {
    private let context: OpaquePointer
    private let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: outputChunk, alignment: 1)
    /// The last call ended a frame (and no byte of another came).
    private var atFrameEnd = false

    /// The corresponding Zstandard calls are `ZSTD_createDCtx` and `ZSTD_DCtx_setParameter`.
    init() {
        guard let context = ZSTD_createDCtx() else { fatalError("Zstandard could not allocate a decompression context") }
        self.context = context
        ZSTD_DCtx_setParameter(context, ZSTD_d_windowLogMax, 23)
    }

    deinit {
        ZSTD_freeDCtx(context)
        scratch.deallocate()
    }

    /// The corresponding Zstandard call is `ZSTD_decompressStream`.
    func decode(_ input: UnsafeRawBufferPointer, budget: Int, into output: inout [Bytes]) throws(HTTPContentDecodingFailure) {
        guard !input.isEmpty else { return }
        var inBuffer = ZSTD_inBuffer(src: input.baseAddress, size: input.count, pos: 0)
        var produced = 0
        while true {
            var outBuffer = ZSTD_outBuffer(dst: scratch.baseAddress, size: scratch.count, pos: 0)
            let result = ZSTD_decompressStream(context, &outBuffer, &inBuffer)
            guard ZSTD_isError(result) == 0 else { throw .corrupt }
            produced += outBuffer.pos
            guard produced <= budget else { throw .tooLarge }
            emit(scratch, count: outBuffer.pos, into: &output)
            atFrameEnd = result == 0
            // All input taken and the buffer not filled: nothing more comes out until more input arrives.
            if inBuffer.pos == inBuffer.size && outBuffer.pos < outBuffer.size { return }
        }
    }

    func finish() throws(HTTPContentDecodingFailure) {
        guard atFrameEnd else { throw .corrupt }
    }
}
