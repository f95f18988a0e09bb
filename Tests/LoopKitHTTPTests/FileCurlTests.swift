import Foundation
import LoopKitHTTP
import Testing

@Suite("Files, live: curl over HTTP/1.1 and HTTP/2")
struct FileCurlTests {
    func curl(_ arguments: [String]) async throws -> (status: Int32, output: String) {
        try await run("/usr/bin/curl", ["-sS", "--max-time", "60"] + arguments)
    }

    /// Serves a fixture with a 300 KiB `big.bin`, `page.html` and its `.gz` variant at `/static`.
    func withFileServer(_ body: (String, FileFixture, [UInt8]) async throws -> Void) async throws {
        let fixture = try FileFixture()
        defer { fixture.remove() }
        let big = (0..<(300 * 1024)).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        try fixture.write("big.bin", big)
        try fixture.write("page.html", "<p>plain</p>")
        try fixture.write("page.html.gz", "not really gzip")
        var router = HTTPRouter()
        router.files("/static", root: fixture.root)
        try await withServer(router: router) { _, port in try await body("http://127.0.0.1:\(port)/static", fixture, big) }
    }

    @Test(arguments: [["--http1.1"], ["--http2-prior-knowledge"]])
    func curlDownloadsAFileWhole(protocolFlag: [String]) async throws {
        try await withFileServer { base, fixture, big in
            let out = fixture.root + "/downloaded"
            let result = try await curl(protocolFlag + ["-o", out, "-w", "%{http_code} %{size_download}", "\(base)/big.bin"])
            #expect(result.output == "200 \(big.count)")
            #expect(try Data(contentsOf: URL(fileURLWithPath: out)) == Data(big))
        }
    }

    @Test(arguments: [["--http1.1"], ["--http2-prior-knowledge"]])
    func curlGetsARange(protocolFlag: [String]) async throws {
        try await withFileServer { base, _, _ in
            let result = try await curl(protocolFlag + ["-r", "1-4", "-w", " %{http_code}", "\(base)/page.html"])
            #expect(result.output == "p>pl 206")
        }
    }

    @Test func curlGetsThePrecompressedVariantAndA304() async throws {
        try await withFileServer { base, _, _ in
            let headers = try await curl(["-D", "-", "-o", "/dev/null", "-H", "Accept-Encoding: gzip", "\(base)/page.html"])
            #expect(headers.output.lowercased().contains("content-encoding: gzip"))
            #expect(headers.output.lowercased().contains("vary: accept-encoding"))
            let tag = try #require(headers.output.split(separator: "\r\n").first { $0.lowercased().hasPrefix("etag:") }?.dropFirst(6))
            let conditional = try await curl(["-o", "/dev/null", "-w", "%{http_code}", "-H", "Accept-Encoding: gzip",
                                              "-H", "If-None-Match: \(tag)", "\(base)/page.html"])
            #expect(conditional.output == "304")
        }
    }

    @Test func curlsHeadHasTheLength() async throws {
        try await withFileServer { base, _, big in
            let result = try await curl(["-I", "\(base)/big.bin"])
            #expect(result.output.lowercased().contains("content-length: \(big.count)"))
        }
    }

    @Test func curlsPathWithDotsStaysInTheRoot() async throws {
        try await withFileServer { base, _, _ in
            let result = try await curl(["--path-as-is", "-o", "/dev/null", "-w", "%{http_code}", "\(base)/../../etc/passwd"])
            #expect(result.output == "400")
        }
    }
}
