import Foundation
import HTTPTypes
import LoopKit
import LoopKitHTTPTesting
import LoopKitNet
import Testing
@testable import LoopKitHTTP

/// Request decompression: `DecompressionMiddleware` on collected routes (opt-in, per group) and
/// `HTTPRequestBody.decompressed(for:limits:)` on streaming ones; 415 for an unknown coding, 413 past the
/// size or the ratio limit, 400 for data that does not decode or is cut short.
@Suite("Request decompression")
struct RequestDecompressionTests {
    static let text = String(repeating: "a line of a request body to compress\n", count: 400)

    /// `bytes` compressed with `coding` by LoopKit's encoder.
    static func compress(_ bytes: Bytes, _ coding: String) -> Bytes {
        let encoder = HTTPContentCoding(token: coding, fileExtension: "").makeEncoder(levels: HTTPCompressionLevels())!
        var output: [Bytes] = []
        bytes.withUnsafeBytes { encoder.encode($0, flush: false, into: &output) }
        encoder.finish(into: &output)
        return Bytes(joining: output)
    }

    static func router(limits: HTTPDecompressionLimits = HTTPDecompressionLimits(), handled: Recorder<String> = Recorder()) -> HTTPRouter {
        var router = HTTPRouter()
        router.group("/in") { group in
            group.use(DecompressionMiddleware(limits: limits))
            group.post("/echo") { request in
                handled.record("echo")
                let encoding = request.head.headerFields[.contentEncoding] ?? "none"
                return .text("\(encoding) \(request.head.headerFields[.contentLength] ?? "-") \(request.body.utf8String)")
            }
        }
        router.post("/raw") { request in .text("\(request.body.count)") }
        router.on(.post, "/stream", bodyLimit: nil) { request, body in
            handled.record("stream")
            var count = 0
            var lines = 0
            for try await chunk in try body.decompressed(for: request, limits: limits) {
                count += chunk.count
                lines += chunk.count(where: { $0 == 0x0A })
            }
            return .text("\(count) bytes \(lines) lines")
        }
        return router
    }

    func post(_ client: HTTPTestClient, _ path: String, _ body: Bytes, encoding: String?) throws -> HTTPTestResponse {
        var fields = HTTPFields()
        if let encoding { fields[.contentEncoding] = encoding }
        return try client.execute(.post, path, headerFields: fields, body: body)
    }

    // MARK: Collected bodies (the middleware)

    @Test(arguments: ["gzip", "br", "zstd"])
    func aCompressedBodyIsDecodedBeforeTheHandler(coding: String) throws {
        let client = try HTTPTestClient(router: Self.router())
        defer { client.shutDown() }
        let response = try post(client, "/in/echo", Self.compress(Bytes(Self.text), coding), encoding: coding)
        #expect(response.status == .ok)
        #expect(response.text == "none \(Self.text.utf8.count) \(Self.text)")
    }

    @Test func anUnencodedOrIdentityBodyIsLeftAsItIs() throws {
        let client = try HTTPTestClient(router: Self.router())
        defer { client.shutDown() }
        #expect(try post(client, "/in/echo", Bytes("plain"), encoding: nil).text == "none 5 plain")
        #expect(try post(client, "/in/echo", Bytes("plain"), encoding: "identity").text == "identity 5 plain")
    }

    @Test func routesWithoutTheMiddlewareGetTheCompressedBytes() throws {
        let client = try HTTPTestClient(router: Self.router())
        defer { client.shutDown() }
        let compressed = Self.compress(Bytes(Self.text), "gzip")
        #expect(try post(client, "/raw", compressed, encoding: "gzip").text == "\(compressed.count)")
    }

    @Test(arguments: HTTPTestMode.allCases)
    func anUnknownCodingIs415NamingTheSupportedOnes(mode: HTTPTestMode) throws {
        let handled = Recorder<String>()
        let client = try HTTPTestClient(router: Self.router(handled: handled), mode: mode)
        defer { client.shutDown() }
        let unknown = try post(client, "/in/echo", Bytes("xyz"), encoding: "compress")
        #expect(unknown.status == .unsupportedMediaType)
        #expect(unknown.headerFields[.acceptEncoding] == "gzip, br, zstd")
        let layered = try post(client, "/in/echo", Self.compress(Self.compress(Bytes("x"), "gzip"), "br"), encoding: "gzip, br")
        #expect(layered.status == .unsupportedMediaType)
        #expect(handled.all.isEmpty)
    }

    @Test(arguments: ["gzip", "br", "zstd"])
    func aBombPastTheSizeLimitIs413WithoutTheHandler(coding: String) throws {
        let handled = Recorder<String>()
        let limits = HTTPDecompressionLimits(maxSize: 1 << 20, maxRatio: 1_000_000)
        let client = try HTTPTestClient(router: Self.router(limits: limits, handled: handled))
        defer { client.shutDown() }
        let bomb = Self.compress(Bytes([UInt8](repeating: 0, count: 16 << 20)), coding)  // 16 MiB of zeros
        #expect(bomb.count < 64 << 10)
        let response = try post(client, "/in/echo", bomb, encoding: coding)
        #expect(response.status == .contentTooLarge)
        #expect(response.text.contains("more than 1048576 bytes"))
        #expect(handled.all.isEmpty)
    }

    @Test func aBodyPastTheRatioLimitIs413AndOneWithinItIsNot() throws {
        let zeros = Self.compress(Bytes([UInt8](repeating: 0, count: 512 << 10)), "gzip")  // about 1000 to 1
        let strict = try HTTPTestClient(router: Self.router(limits: HTTPDecompressionLimits(maxRatio: 100)))
        defer { strict.shutDown() }
        let refused = try post(strict, "/in/echo", zeros, encoding: "gzip")
        #expect(refused.status == .contentTooLarge)
        #expect(refused.text.contains("100 times"))
        let lenient = try HTTPTestClient(router: Self.router(limits: HTTPDecompressionLimits(maxRatio: 10_000)))
        defer { lenient.shutDown() }
        #expect(try post(lenient, "/in/echo", zeros, encoding: "gzip").status == .ok)
        // Below the ratio floor (64 KiB decoded) the ratio is not checked: a small, very compressible body passes.
        let small = Self.compress(Bytes([UInt8](repeating: 0, count: 32 << 10)), "gzip")
        #expect(try post(strict, "/in/echo", small, encoding: "gzip").status == .ok)
    }

    @Test(arguments: ["gzip", "br", "zstd"])
    func aTruncatedOrCorruptBodyIs400(coding: String) throws {
        let client = try HTTPTestClient(router: Self.router())
        defer { client.shutDown() }
        let whole = Self.compress(Bytes(Self.text), coding)
        let truncated = try post(client, "/in/echo", Bytes(whole.prefix(whole.count - 6)), encoding: coding)
        #expect(truncated.status == .badRequest)
        let garbage = try post(client, "/in/echo", Bytes("this is not compressed at all, not even a little"), encoding: coding)
        #expect(garbage.status == .badRequest)
    }

    // MARK: Streamed bodies

    @Test(arguments: ["gzip", "br", "zstd"])
    func aStreamingRouteReadsTheBodyDecodedAsItArrives(coding: String) throws {
        let client = try HTTPTestClient(router: Self.router())
        defer { client.shutDown() }
        // About 300 KiB of numbered lines (compressible, well within the ratio): several chunks in, many out.
        let big = Bytes((0..<10_000).map { "line \($0 * 7919 % 10_007) of a streamed request body\n" }.joined())
        let response = try post(client, "/stream", Self.compress(big, coding), encoding: coding)
        #expect(response.text == "\(big.count) bytes 10000 lines")
        #expect(try post(client, "/stream", Bytes("a\nb\n"), encoding: nil).text == "4 bytes 2 lines")
    }

    @Test func aStreamingRoutesBombIs413AndATruncatedBody400AndAnUnknownCoding415() throws {
        let client = try HTTPTestClient(router: Self.router(limits: HTTPDecompressionLimits(maxSize: 1 << 20, maxRatio: 1_000_000)))
        defer { client.shutDown() }
        let bomb = try post(client, "/stream", Self.compress(Bytes([UInt8](repeating: 0, count: 16 << 20)), "zstd"), encoding: "zstd")
        #expect(bomb.status == .contentTooLarge)
        let fresh = try HTTPTestClient(router: Self.router())
        defer { fresh.shutDown() }
        let whole = Self.compress(Bytes(Self.text), "br")
        #expect(try post(fresh, "/stream", Bytes(whole.prefix(whole.count - 3)), encoding: "br").status == .badRequest)
        #expect(try post(fresh, "/stream", Bytes("x"), encoding: "deflate").status == .unsupportedMediaType)
    }

    // MARK: Other encoders

    @Test("Bodies compressed by Python's gzip, brotli and zstandard, sent by urllib3, decode")
    func pythonsEncodersBodiesDecode() async throws {
        try await withServer(router: Self.router()) { _, port in
            let script = """
            import sys, gzip, brotli, zstandard, urllib3
            port, text = int(sys.argv[1]), sys.argv[2].encode()
            http = urllib3.PoolManager()
            for coding, compress in [("gzip", gzip.compress), ("br", brotli.compress),
                                     ("zstd", zstandard.ZstdCompressor().compress)]:
                for path in ["/in/echo", "/stream"]:
                    r = http.request("POST", f"http://127.0.0.1:{port}{path}", body=compress(text),
                                     headers={"Content-Encoding": coding})
                    print(coding, path, r.status, r.data.decode()[:40].replace("\\n", "|"))
            """
            let result = try await run("/usr/bin/env", ["python3", "-c", script, "\(port)", Self.text])
            #expect(result.status == 0)
            let length = Self.text.utf8.count
            for coding in ["gzip", "br", "zstd"] {
                #expect(result.output.contains("\(coding) /in/echo 200 none \(length) a line of a request body"))
                #expect(result.output.contains("\(coding) /stream 200 \(length) bytes 400 lines"))
            }
        }
    }
}
