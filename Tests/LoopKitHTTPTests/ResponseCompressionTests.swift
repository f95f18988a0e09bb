import Foundation
import HTTPTypes
import LoopKit
import LoopKitHTTPTesting
import LoopKitNet
import Testing
@testable import LoopKitHTTP

/// `CompressionMiddleware`: negotiation by `Accept-Encoding`, what it leaves alone, bytes and streamed
/// bodies, event streams flushed per event, over HTTP/1.1 and HTTP/2, checked by decoding (LoopKit's own
/// decoders in memory, curl and Python's gzip, brotli and zstandard live).
@Suite("Response compression")
struct ResponseCompressionTests {
    /// 4 KiB of JSON-ish text: well above the minimum size, and compressible.
    static let json = Bytes("[" + (0..<120).map { "{\"id\":\($0),\"title\":\"item number \($0)\"}" }.joined(separator: ",") + "]")

    static func router(_ middleware: CompressionMiddleware = CompressionMiddleware()) -> HTTPRouter {
        var router = HTTPRouter()
        router.use(middleware)
        router.get("/json") { _ in .bytes(json, contentType: "application/json", headerFields: [.eTag: "\"v1\""]) }
        router.get("/small") { _ in .text("tiny") }
        router.get("/png") { _ in .bytes(json, contentType: "image/png") }
        router.get("/html") { _ in .bytes(json, contentType: "Text/HTML; charset=utf-8") }
        router.get("/problem") { _ in .bytes(json, contentType: "application/problem+json") }
        router.get("/encoded") { _ in .bytes(json, contentType: "text/plain", headerFields: [.contentEncoding: "gzip"]) }
        router.get("/no-transform") { _ in .bytes(json, contentType: "text/plain", headerFields: [.cacheControl: "no-transform"]) }
        router.get("/empty") { _ in HTTPServerResponse(status: .noContent, headerFields: [.contentType: "text/plain"]) }
        router.get("/stream") { _ in
            HTTPServerResponse(status: .ok, headerFields: [.contentType: "text/plain"], body: .stream { writer in
                for index in 0..<50 { try await writer.write("line \(index) of a streamed body\n") }
            })
        }
        return router
    }

    /// `body` decoded with `coding` (LoopKit's decoder), or nil when it does not decode.
    static func decode(_ body: Bytes, _ coding: String) -> Bytes? {
        guard let decoder = HTTPContentCoding(token: coding, fileExtension: "").makeDecoder() else { return nil }
        var output: [Bytes] = []
        do {
            try body.withUnsafeBytes { raw throws(HTTPContentDecodingFailure) in try decoder.decode(raw, budget: .max, into: &output) }
            try decoder.finish()
        } catch {
            return nil
        }
        return Bytes(joining: output)
    }

    func get(_ client: HTTPTestClient, _ path: String, accept: String?, method: HTTPRequest.Method = .get) throws -> HTTPTestResponse {
        var fields = HTTPFields()
        if let accept { fields[.acceptEncoding] = accept }
        return try client.execute(method, path, headerFields: fields)
    }

    // MARK: Negotiation

    @Test(arguments: HTTPTestMode.allCases)
    func aBytesBodyIsCompressedWithTheOfferedCodingTheClientPrefers(mode: HTTPTestMode) throws {
        let client = try HTTPTestClient(router: Self.router(), mode: mode)
        defer { client.shutDown() }
        let response = try get(client, "/json", accept: "gzip, deflate, br, zstd")
        #expect(response.headerFields[.contentEncoding] == "zstd")  // equal q: the server's order (zstd first)
        #expect(response.headerFields[.vary] == "Accept-Encoding")
        #expect(response.headerFields[.contentLength] == String(response.body.count))
        #expect(response.body.count < Self.json.count / 3)
        #expect(Self.decode(response.body, "zstd") == Self.json)
    }

    @Test func qValuesOrderTheCodings() throws {
        let client = try HTTPTestClient(router: Self.router())
        defer { client.shutDown() }
        let gzip = try get(client, "/json", accept: "zstd;q=0.1, br;q=0.5, gzip;q=1.0")
        #expect(gzip.headerFields[.contentEncoding] == "gzip")
        #expect(Self.decode(gzip.body, "gzip") == Self.json)
        let brotli = try get(client, "/json", accept: "gzip;q=0.8, br")
        #expect(brotli.headerFields[.contentEncoding] == "br")
        #expect(Self.decode(brotli.body, "br") == Self.json)
    }

    @Test func aRefusedCodingIsNeverChosen() throws {
        let client = try HTTPTestClient(router: Self.router(CompressionMiddleware(codings: [.gzip])))
        defer { client.shutDown() }
        let refused = try get(client, "/json", accept: "gzip;q=0, br")
        #expect(refused.headerFields[.contentEncoding] == nil)
        #expect(refused.body == Self.json)
        #expect(refused.headerFields[.vary] == "Accept-Encoding")  // it could have been compressed
    }

    @Test func starAcceptsTheOfferedCodingsUnlessItIsRefused() throws {
        let client = try HTTPTestClient(router: Self.router())
        defer { client.shutDown() }
        #expect(try get(client, "/json", accept: "*").headerFields[.contentEncoding] == "zstd")
        #expect(try get(client, "/json", accept: "*;q=0.5, zstd;q=0, br;q=0").headerFields[.contentEncoding] == "gzip")
        #expect(try get(client, "/json", accept: "*;q=0").headerFields[.contentEncoding] == nil)
    }

    @Test func identityRefusedStillGetsACodingOrTheIdentityNever406() throws {
        let client = try HTTPTestClient(router: Self.router())
        defer { client.shutDown() }
        let coded = try get(client, "/json", accept: "identity;q=0, gzip")
        #expect(coded.headerFields[.contentEncoding] == "gzip")
        let nothing = try get(client, "/json", accept: "identity;q=0")
        #expect(nothing.status == .ok)
        #expect(nothing.headerFields[.contentEncoding] == nil)
        #expect(nothing.body == Self.json)
    }

    @Test func noAcceptEncodingGetsTheIdentityWithVary() throws {
        let client = try HTTPTestClient(router: Self.router())
        defer { client.shutDown() }
        let response = try get(client, "/json", accept: nil)
        #expect(response.headerFields[.contentEncoding] == nil)
        #expect(response.headerFields[.vary] == "Accept-Encoding")
        #expect(response.body == Self.json)
    }

    // MARK: What is left alone

    @Test func aBodyBelowTheMinimumSizeIsSentAsItIs() throws {
        let client = try HTTPTestClient(router: Self.router())
        defer { client.shutDown() }
        let small = try get(client, "/small", accept: "gzip")
        #expect(small.headerFields[.contentEncoding] == nil)
        #expect(small.headerFields[.vary] == nil)
        #expect(small.text == "tiny")
        let lowered = try HTTPTestClient(router: Self.router(CompressionMiddleware(minimumSize: 4)))
        defer { lowered.shutDown() }
        #expect(try get(lowered, "/small", accept: "gzip").headerFields[.contentEncoding] == "gzip")
    }

    @Test func onlyListedContentTypesAreCompressedParametersAndCaseIgnored() throws {
        let client = try HTTPTestClient(router: Self.router())
        defer { client.shutDown() }
        #expect(try get(client, "/png", accept: "gzip").headerFields[.contentEncoding] == nil)
        #expect(try get(client, "/png", accept: "gzip").headerFields[.vary] == nil)
        #expect(try get(client, "/html", accept: "gzip").headerFields[.contentEncoding] == "gzip")
        #expect(try get(client, "/problem", accept: "gzip").headerFields[.contentEncoding] == "gzip")  // +json
        let onlyPNG = try HTTPTestClient(router: Self.router(CompressionMiddleware(contentTypes: ["image/png"])))
        defer { onlyPNG.shutDown() }
        #expect(try get(onlyPNG, "/png", accept: "gzip").headerFields[.contentEncoding] == "gzip")
        #expect(try get(onlyPNG, "/json", accept: "gzip").headerFields[.contentEncoding] == nil)
    }

    @Test func anAlreadyEncodedBodyIsLeftAlone() throws {
        let client = try HTTPTestClient(router: Self.router())
        defer { client.shutDown() }
        let response = try get(client, "/encoded", accept: "zstd, gzip")
        #expect(response.headerFields[.contentEncoding] == "gzip")
        #expect(response.body == Self.json)
    }

    @Test func cacheControlNoTransformIsLeftAlone() throws {
        let client = try HTTPTestClient(router: Self.router())
        defer { client.shutDown() }
        let response = try get(client, "/no-transform", accept: "gzip")
        #expect(response.headerFields[.contentEncoding] == nil)
        #expect(response.body == Self.json)
    }

    @Test func headAnd204AreLeftAlone() throws {
        let client = try HTTPTestClient(router: Self.router())
        defer { client.shutDown() }
        let head = try client.execute(HTTPRequest(method: .head, scheme: nil, authority: nil, path: "/json",
                                                  headerFields: [.acceptEncoding: "gzip"]))
        #expect(head.headerFields[.contentEncoding] == nil)
        #expect(head.headerFields[.contentLength] == String(Self.json.count))
        let empty = try get(client, "/empty", accept: "gzip")
        #expect(empty.status == .noContent)
        #expect(empty.headerFields[.contentEncoding] == nil)
    }

    @Test func aCompressedResponsesETagIsWeak() throws {
        let client = try HTTPTestClient(router: Self.router())
        defer { client.shutDown() }
        #expect(try get(client, "/json", accept: "gzip").headerFields[.eTag] == "W/\"v1\"")
        #expect(try get(client, "/json", accept: nil).headerFields[.eTag] == "\"v1\"")
    }

    @Test func aRouteBehindItStaysInline() throws {
        var router = HTTPRouter()
        router.use(CompressionMiddleware())
        router.get("/") { _ in .text(String(repeating: withUnsafeCurrentTask { $0 == nil } ? "no task " : "task ", count: 200)) }
        let client = try HTTPTestClient(router: router, mode: .live)
        defer { client.shutDown() }
        let response = try get(client, "/", accept: "gzip")
        #expect(response.headerFields[.contentEncoding] == "gzip")
        #expect(Self.decode(response.body, "gzip")?.utf8String.hasPrefix("no task ") == true)
    }

    // MARK: Streamed bodies and files

    @Test(arguments: ["gzip", "br", "zstd"])
    func aStreamedBodyIsCompressedAndSentChunked(coding: String) throws {
        let client = try HTTPTestClient(router: Self.router())
        defer { client.shutDown() }
        let response = try get(client, "/stream", accept: coding)
        #expect(response.headerFields[.contentEncoding] == coding)
        #expect(response.headerFields[.contentLength] == nil)
        #expect(response.headerFields[.transferEncoding] == "chunked")
        let expected = (0..<50).map { "line \($0) of a streamed body\n" }.joined()
        #expect(Self.decode(response.body, coding)?.utf8String == expected)
    }

    @Test func aFileIsCompressedButNeverARangeOfIt() throws {
        let fixture = try FileFixture()
        defer { fixture.remove() }
        let text = String(repeating: "static file text, compressible; ", count: 200)
        try fixture.write("page.txt", text)
        var router = HTTPRouter()
        router.use(CompressionMiddleware())
        router.files("/static", root: fixture.root)
        let group = try LoopGroup(threads: 1)
        defer { group.shutdown() }
        let client = try HTTPTestClient(router: router, group: group)
        defer { client.shutDown() }
        let whole = try client.get("/static/page.txt", [.acceptEncoding: "br"])
        #expect(whole.field(.contentEncoding) == "br")
        // A small file is read whole and compressed whole: framed by the compressed length, not the file's.
        #expect(whole.field(.contentLength) == String(whole.body.count))
        #expect(whole.field(.eTag)?.hasPrefix("W/\"") == true)
        #expect(Self.decode(whole.body, "br")?.utf8String == text)
        let range = try client.get("/static/page.txt", [.acceptEncoding: "br", .range: "bytes=0-9"])
        #expect(range.status == .partialContent)
        #expect(range.field(.contentEncoding) == nil)
        #expect(range.text == String(text.prefix(10)))
        // The weak tag matches If-None-Match (weak comparison): 304, which is left alone.
        let notModified = try client.get("/static/page.txt", [.acceptEncoding: "br", .ifNoneMatch: whole.field(.eTag) ?? ""])
        #expect(notModified.status == .notModified)
        #expect(notModified.field(.contentEncoding) == nil)
    }

    /// A file beyond ``HTTPFileServer/smallFileLimit`` is read in chunks and compressed as it streams:
    /// chunked, no length, the same text once decoded.
    @Test func aLargerFileIsCompressedAsItStreams() throws {
        let fixture = try FileFixture()
        defer { fixture.remove() }
        let text = String(repeating: "static file text, compressible; ", count: 1_000)  // 32,000 bytes
        #expect(text.utf8.count > HTTPFileServer.smallFileLimit)
        try fixture.write("page.txt", text)
        var router = HTTPRouter()
        router.use(CompressionMiddleware())
        router.files("/static", root: fixture.root)
        let group = try LoopGroup(threads: 1)
        defer { group.shutdown() }
        let client = try HTTPTestClient(router: router, group: group)
        defer { client.shutDown() }
        let response = try client.get("/static/page.txt", [.acceptEncoding: "gzip"])
        #expect(response.field(.contentEncoding) == "gzip")
        #expect(response.field(.contentLength) == nil)
        #expect(Self.decode(response.body, "gzip")?.utf8String == text)
    }

    // MARK: Live, with other decoders

    /// An event stream whose second event waits until `/release` is asked for: a client that reads the
    /// first event before asking shows that each event was flushed out of the compressor.
    static func eventRouter(gate: Gate) -> HTTPRouter {
        var router = HTTPRouter()
        router.use(CompressionMiddleware())
        router.get("/events") { _ in
            .events { events in
                try await events.send(ServerSentEvent(data: "first"))
                await gate.wait()
                try await events.send(ServerSentEvent(data: "second"))
            }
        }
        router.get("/release") { _ in
            gate.open()
            return .text("released")
        }
        return router
    }

    @Test(arguments: ["gzip", "br", "zstd"])
    func eachServerSentEventIsFlushedAsItIsSent(coding: String) async throws {
        let gate = Gate()
        try await withServer(router: Self.eventRouter(gate: gate)) { _, port in
            let script = """
            import socket, sys, zlib, brotli, zstandard, urllib.request
            port, coding = int(sys.argv[1]), sys.argv[2]
            decoder = {"gzip": lambda: zlib.decompressobj(16 + 15), "br": lambda: brotli.Decompressor(),
                       "zstd": lambda: zstandard.ZstdDecompressor().decompressobj()}[coding]()
            decode = decoder.decompress if coding != "br" else decoder.process
            sock = socket.create_connection(("127.0.0.1", port)); sock.settimeout(20)
            sock.sendall(f"GET /events HTTP/1.1\\r\\nHost: t\\r\\nAccept-Encoding: {coding}\\r\\n\\r\\n".encode())
            received, text = b"", ""
            while "data: first" not in text:
                data = sock.recv(65536)
                if not data: break
                received += data
                if b"\\r\\n\\r\\n" not in received: continue
                head, rest = received.split(b"\\r\\n\\r\\n", 1)
                body = b""
                while True:  # the whole chunks so far
                    line, sep, after = rest.partition(b"\\r\\n")
                    if not sep: break
                    size = int(line, 16)
                    if len(after) < size + 2 or size == 0: break
                    body += after[:size]; rest = after[size + 2:]
                decoder = {"gzip": lambda: zlib.decompressobj(16 + 15), "br": lambda: brotli.Decompressor(),
                           "zstd": lambda: zstandard.ZstdDecompressor().decompressobj()}[coding]()
                text = (decoder.decompress if coding != "br" else decoder.process)(body).decode()
            print("encoding:" + [l for l in head.decode().split("\\r\\n") if l.lower().startswith("content-encoding")][0].split(":")[1].strip())
            print("before release:" + repr(text))
            urllib.request.urlopen(f"http://127.0.0.1:{port}/release").read()
            while b"\\r\\n0\\r\\n\\r\\n" not in received:
                data = sock.recv(65536)
                if not data: break
                received += data
            """
            let result = try await run("/usr/bin/env", ["python3", "-c", script, "\(port)", coding])
            #expect(result.status == 0, "\(result.output)")
            #expect(result.output.contains("encoding:\(coding)"))
            #expect(result.output.contains("before release:'data: first\\n\\n'"))
        }
    }

    @Test("curl --compressed over HTTP/1.1 and h2c decodes each coding")
    func curlDecodesEachCodingOverBothProtocols() async throws {
        try await withServer(router: Self.router()) { _, port in
            for coding in ["gzip", "br", "zstd"] {
                for protocolFlag in ["--http1.1", "--http2-prior-knowledge"] {
                    for path in ["/json", "/stream"] {
                        let result = try await run("/usr/bin/curl", [
                            "-sS", "--max-time", "30", protocolFlag, "--compressed", "-H", "Accept-Encoding: \(coding)",
                            "-D", "-", "-w", "\n%{http_version}", "http://127.0.0.1:\(port)\(path)",
                        ])
                        let expected = path == "/json" ? Self.json.utf8String
                            : (0..<50).map { "line \($0) of a streamed body\n" }.joined()
                        #expect(result.output.lowercased().contains("content-encoding: \(coding)"), "\(coding) \(protocolFlag) \(path)")
                        #expect(result.output.contains(expected), "\(coding) \(protocolFlag) \(path)")
                        #expect(result.output.hasSuffix(protocolFlag == "--http1.1" ? "\n1.1" : "\n2"))
                    }
                }
            }
        }
    }
}
