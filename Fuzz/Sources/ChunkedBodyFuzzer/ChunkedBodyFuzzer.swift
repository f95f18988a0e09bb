import FuzzSupport
import HTTPTypes
import LoopKitHTTP

/// The chunked decoder (inside the request parser) on its own: the input follows a fixed chunked head.
///
/// Byte 0 picks the check. Even: the rest is a chunked body as it arrived; parsed whole, byte by byte and in
/// pseudo-random pieces it gives the same body, trailers and error. Odd: the rest is split into chunks
/// (at 0xFF bytes), encoded correctly with pseudo-random chunk extensions and a trailer, and must decode to
/// exactly the bytes encoded, with the trailer kept, however it is split.
@_cdecl("LLVMFuzzerTestOneInput")
public func chunkedBodyFuzzer(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard size >= 1, let data else { return 0 }
    let rest = UnsafeRawBufferPointer(start: data + 1, count: size - 1)
    var generator = SplitMix(hashing: rest)
    let head = Array("POST /upload HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n".utf8)
    let limits = HTTPParserLimits(maxRequestLineLength: 64, maxHeadSize: 256, maxFieldCount: 8, maxBodySize: 4096)

    var stream = head
    var expectedBody: [UInt8]?
    if data[0] & 1 == 0 {
        stream += rest
    } else {
        let chunks = rest.split(separator: 0xFF, omittingEmptySubsequences: true)
        for chunk in chunks {
            stream += Array(String(chunk.count, radix: 16, uppercase: Bool.random(using: &generator)).utf8)
            if Bool.random(using: &generator) { stream += Array(";ext=\"v\" ;n".utf8) }
            stream += [0x0D, 0x0A] + chunk + [0x0D, 0x0A]
        }
        stream += Array("0\r\nX-Checksum: \(chunks.count)\r\n\r\n".utf8)
        expectedBody = chunks.flatMap { $0 }
    }

    stream.withUnsafeBytes { bytes in
        let whole = parse(bytes, cuts: [], limits: limits)
        let byByte = parse(bytes, cuts: Array(1..<bytes.count), limits: limits)
        fuzzCheck(byByte == whole, "byte by byte: \(byByte) whole: \(whole)")
        let cuts = randomCuts(count: bytes.count, using: &generator)
        let split = parse(bytes, cuts: cuts, limits: limits)
        fuzzCheck(split == whole, "cuts \(cuts): \(split) whole: \(whole)")
        if let expectedBody {
            if expectedBody.count > limits.maxBodySize {
                fuzzCheck(whole.error == .bodyTooLarge, "a \(expectedBody.count)-byte body: \(whole)")
            } else {
                fuzzCheck(whole.error == nil && whole.requests.count == 1 && whole.leftover == 0, "valid chunked body: \(whole)")
                fuzzCheck(whole.requests.first?.body == expectedBody, "decoded body differs from the chunks encoded")
                fuzzCheck(whole.requests.first?.trailers?[HTTPField.Name("X-Checksum")!] != nil, "trailer lost")
            }
        }
    }
    return 0
}
