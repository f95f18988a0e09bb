// A minimal NIOHTTP1 server, the peer of LoopKitHTTP in `make bench`: `GET /hello`, and
// `GET /work?items=N` (N items of ~1 µs of work) run inline in the handler (`--work inline`) or on
// NIOThreadPool (`--work pool`). One event loop thread. Prints `listening on HOST:PORT` when ready.
// With `--tls-cert FILE --tls-key FILE` it serves the same routes over HTTPS: NIOSSLServerHandler (BoringSSL)
// in front of the HTTP pipeline, NIOSSL's default server configuration (TLS 1.2 and 1.3).
import CPeerOpenSSL
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
#if canImport(Glibc)
import Glibc
#endif

enum WorkMode { case inline, pool }

/// About 1 µs of work per item, calibrated like LoopDemo's SyntheticWork.
struct Work: Sendable {
    let rounds: Int
    @inline(never)
    func callAsFunction(_ item: Int) -> UInt64 {
        var x = UInt64(truncatingIfNeeded: item) &+ 0x9E37_79B9_7F4A_7C15
        for _ in 0..<rounds {
            x ^= x >> 30
            x &*= 0xBF58_476D_1CE4_E5B9
            x ^= x >> 27
        }
        return x
    }

    static func calibrated(nanoseconds: Double) -> Work {
        let probe = Work(rounds: 200)
        var sink: UInt64 = 0
        var best = UInt64.max
        for _ in 0..<3 {
            let start = DispatchTimeLike.now()
            for item in 0..<500 { sink &+= probe(item) }
            best = min(best, DispatchTimeLike.now() - start)
        }
        let perRound = max(Double(best) / (500 * 200), 0.05)
        return Work(rounds: max(1, Int(nanoseconds / perRound)) | Int(sink & 0))
    }
}

enum DispatchTimeLike {
    static func now() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }
}

final class HTTPHandler: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    let mode: WorkMode
    let pool: NIOThreadPool
    let work: Work
    var head: HTTPRequestHead?
    /// A streamed request under way: `/upload` counts and hashes its body, `/echo` writes it back.
    enum Streaming { case upload(count: Int, digest: OpaquePointer), echo }
    var streaming: Streaming?

    init(mode: WorkMode, pool: NIOThreadPool, work: Work) {
        self.mode = mode
        self.pool = pool
        self.work = work
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
            if head.method == .POST && head.uri == "/upload" {
                let digest = EVP_MD_CTX_new()!
                EVP_DigestInit_ex(digest, EVP_sha256(), nil)
                streaming = .upload(count: 0, digest: digest)
            } else if head.method == .POST && head.uri == "/echo" {
                streaming = .echo
                var fields = HTTPHeaders()
                fields.add(name: "Transfer-Encoding", value: "chunked")
                context.writeAndFlush(wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: .ok, headers: fields))), promise: nil)
            }
        case .body(let buffer):
            switch streaming {
            case .upload(let count, let digest):
                buffer.withUnsafeReadableBytes { _ = EVP_DigestUpdate(digest, $0.baseAddress, $0.count) }
                streaming = .upload(count: count + buffer.readableBytes, digest: digest)
            case .echo:
                context.writeAndFlush(wrapOutboundOut(.body(.byteBuffer(buffer))), promise: nil)
            case nil:
                break
            }
        case .end:
            guard let head else { return }
            self.head = nil
            switch streaming {
            case .upload(let count, let digest):
                var bytes = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
                var length: UInt32 = 0
                EVP_DigestFinal_ex(digest, &bytes, &length)
                EVP_MD_CTX_free(digest)
                streaming = nil
                let hex = bytes[..<Int(length)].map { String(format2: $0) }.joined()
                respond("received \(count) sha256 \(hex)\n", head: head, context: context)
            case .echo:
                streaming = nil
                context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
            case nil:
                route(head, context: context)
            }
        }
    }

    func route(_ head: HTTPRequestHead, context: ChannelHandlerContext) {
        if head.uri == "/hello" {
            respond("Hello, World!", head: head, context: context)
        } else if head.uri.hasPrefix("/work?items="), let items = Int(head.uri.dropFirst("/work?items=".count)) {
            let work = work
            switch mode {
            case .inline:
                var sink: UInt64 = 0
                for item in 0..<items { sink &+= work(item) }
                respond("processed \(items)" + (sink == 1 ? " " : ""), head: head, context: context)
            case .pool:
                let loop = context.eventLoop
                let bound = NIOLoopBound((self, context), eventLoop: loop)
                pool.runIfActive(eventLoop: loop) { () -> UInt64 in
                    var sink: UInt64 = 0
                    for item in 0..<items { sink &+= work(item) }
                    return sink
                }.whenSuccess { sink in
                    let (handler, context) = bound.value
                    handler.respond("processed \(items)" + (sink == 1 ? " " : ""), head: head, context: context)
                }
            }
        } else {
            respond("Not Found", status: .notFound, head: head, context: context)
        }
    }

    func respond(_ text: String, status: HTTPResponseStatus = .ok, head: HTTPRequestHead, context: ChannelHandlerContext) {
        var buffer = context.channel.allocator.buffer(capacity: text.utf8.count)
        buffer.writeString(text)
        var fields = HTTPHeaders()
        fields.add(name: "Content-Type", value: "text/plain")
        fields.add(name: "Content-Length", value: String(buffer.readableBytes))
        let keepAlive = head.isKeepAlive
        if !keepAlive { fields.add(name: "Connection", value: "close") }
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: status, headers: fields))), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(buffer))), promise: nil)
        let done = context.writeAndFlushPromise(wrapOutboundOut(.end(nil)))
        if !keepAlive { done.whenComplete { [channel = context.channel] _ in channel.close(promise: nil) } }
    }
}

extension String {
    /// Two lowercase hex digits.
    init(format2 byte: UInt8) {
        let digits = Array("0123456789abcdef")
        self = String([digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]])
    }
}

extension ChannelHandlerContext {
    func writeAndFlushPromise(_ data: NIOAny) -> EventLoopFuture<Void> {
        let promise = eventLoop.makePromise(of: Void.self)
        writeAndFlush(data, promise: promise)
        return promise.futureResult
    }
}

var port = 0
var mode = WorkMode.inline
var certificatePath: String?
var keyPath: String?
var arguments = CommandLine.arguments.dropFirst().makeIterator()
while let argument = arguments.next() {
    switch argument {
    case "--port": port = Int(arguments.next() ?? "0") ?? 0
    case "--work": mode = arguments.next() == "pool" ? .pool : .inline
    case "--tls-cert": certificatePath = arguments.next()
    case "--tls-key": keyPath = arguments.next()
    default: break
    }
}

/// The HTTPS context when both --tls-cert and --tls-key were given.
let tls: NIOSSLContext? = try {
    guard let certificatePath, let keyPath else { return nil }
    let chain = try NIOSSLCertificate.fromPEMFile(certificatePath).map { NIOSSLCertificateSource.certificate($0) }
    let key = try NIOSSLPrivateKey(file: keyPath, format: .pem)
    return try NIOSSLContext(configuration: .makeServerConfiguration(certificateChain: chain, privateKey: .privateKey(key)))
}()

let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
let pool = NIOThreadPool(numberOfThreads: 2)
pool.start()
let work = Work.calibrated(nanoseconds: 1_000)
let channel = try ServerBootstrap(group: group)
    .serverChannelOption(.backlog, value: 1024)
    .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
    .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
    .childChannelInitializer { channel in
        channel.eventLoop.makeCompletedFuture {
            if let tls { try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: tls)) }
            try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
            try channel.pipeline.syncOperations.addHandler(HTTPHandler(mode: mode, pool: pool, work: work))
        }
    }
    .bind(host: "127.0.0.1", port: port).wait()
print("listening on 127.0.0.1:\(channel.localAddress?.port ?? port)")
fflush(nil)
try channel.closeFuture.wait()
