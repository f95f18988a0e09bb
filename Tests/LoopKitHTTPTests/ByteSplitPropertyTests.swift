import Testing
@testable import LoopKitHTTP

/// However the bytes are split, the parser reports the same requests, bodies and errors.
@Suite("Request parser: byte splits do not change the result")
struct ByteSplitPropertyTests {
    static let streams: [String] = [
        "GET /a HTTP/1.1\r\nHost: h\r\nAccept: */*\r\n\r\n",
        "\r\nGET /a HTTP/1.1\r\nHost: h\r\n\r\nGET /b?q=1 HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n",
        "POST /echo HTTP/1.1\r\nHost: h\r\nContent-Length: 11\r\n\r\nhello world",
        "POST /echo HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n5;x=y\r\nhello\r\n1\r\n \r\nA\r\n0123456789\r\n0\r\nT: v\r\n\r\nGET / HTTP/1.0\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: h\r\nX: a\r\n b\r\n\r\n",
        "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcX\r\n",
        "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
        "GET / HTTP/1.1\nHost: h\r\n\r\n",
    ]

    @Test(arguments: streams.indices)
    func everySingleCutGivesTheSameResult(stream index: Int) {
        let bytes = Array(Self.streams[index].utf8)
        let whole = parse(bytes)
        for cut in 1..<bytes.count {
            #expect(parse(bytes, cuts: [cut]) == whole, "cut at \(cut)")
        }
    }

    @Test(arguments: streams.indices)
    func byteByByteGivesTheSameResult(stream index: Int) {
        let bytes = Array(Self.streams[index].utf8)
        #expect(parse(bytes, cuts: Array(1..<bytes.count)) == parse(bytes))
    }

    @Test(arguments: streams.indices)
    func randomSplitsGiveTheSameResult(stream index: Int) {
        let bytes = Array(Self.streams[index].utf8)
        let whole = parse(bytes)
        var generator = SplitMix(seed: UInt64(index) &+ 0x9E37)
        for _ in 0..<200 {
            let cutCount = Int.random(in: 1...6, using: &generator)
            let cuts = (0..<cutCount).map { _ in Int.random(in: 1..<bytes.count, using: &generator) }
            #expect(parse(bytes, cuts: cuts) == whole, "cuts \(cuts)")
        }
    }

    @Test func randomBytesNeverCrashTheParser() {
        var generator = SplitMix(seed: 42)
        let alphabet = Array("GET POST / HTTP/1.1\r\n:Host hContent-Length: 0123456789abcdefTransfer-Encoding chunked;,\t \u{0}\u{7F}".utf8)
        for _ in 0..<2000 {
            let length = Int.random(in: 0..<200, using: &generator)
            let bytes = (0..<length).map { _ in alphabet[Int.random(in: 0..<alphabet.count, using: &generator)] }
            let whole = parse(bytes)
            let cut = length > 1 ? [Int.random(in: 1..<length, using: &generator)] : []
            #expect(parse(bytes, cuts: cut) == whole)
        }
    }
}

/// A seeded generator so failures repeat.
struct SplitMix: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
