import FuzzSupport
import LoopKitHTTP

/// The request parser over arbitrary bytes: parsed whole, byte by byte and in pseudo-random pieces (chosen
/// by a hash of the input), it reports the same requests, bodies, trailers, error and leftover. Twice: with
/// the default limits and with small ones, so the limit checks meet split input too.
@_cdecl("LLVMFuzzerTestOneInput")
public func requestParserFuzzer(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = UnsafeRawBufferPointer(start: data, count: size)
    var generator = SplitMix(hashing: bytes)
    let small = HTTPParserLimits(maxRequestLineLength: 64, maxHeadSize: 160, maxFieldCount: 4, maxBodySize: 48)
    for limits in [HTTPParserLimits(), small] {
        let whole = parse(bytes, cuts: [], limits: limits)
        let byByte = parse(bytes, cuts: size > 1 ? Array(1..<size) : [], limits: limits)
        fuzzCheck(byByte == whole, "byte by byte: \(byByte) whole: \(whole)")
        for _ in 0..<2 {
            let cuts = randomCuts(count: size, using: &generator)
            let split = parse(bytes, cuts: cuts, limits: limits)
            fuzzCheck(split == whole, "cuts \(cuts): \(split) whole: \(whole)")
        }
    }
    return 0
}
