// A minimal swift-nio-http2 server, the NIO peer of LoopKitHTTP in `make bench-h2`: one event loop, GET /hello
// answered "Hello, World!" (13 bytes, text/plain) on every stream, anything else 404.
//
//   NIOHTTP2Peer [--port P] [--tls-cert FILE --tls-key FILE]
//
// Plain: HTTP/2 by prior knowledge (h2c) from the first byte. With a certificate: NIOSSL (BoringSSL) with ALPN
// offering h2 only. Each stream is a child channel (NIOHTTP2Handler's multiplexer) with
// HTTP2FramePayloadToHTTP1ServerCodec, so the handler sees HTTP/1-style request parts as NIO's examples do.
// Prints `listening on HOST:PORT` when ready.
import CPeerOpenSSL
import NIOCore
import NIOHTTP1
import NIOHTTP2
import NIOPosix
import NIOSSL

/// Answers each request at its end: /hello with the greeting, /upload with its body's count and digest, anything else
/// 404. An upload's chunks are hashed as they arrive and dropped: its stream's window reopens as NIO delivers them
/// (the child channel reads automatically), nothing is buffered. Runs on the stream's loop.
final class HelloHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private var isHello = false
    /// The body counted and hashed so far, while a POST /upload is under way.
    private var upload: (count: Int, digest: OpaquePointer)?
    private let greeting = ByteBuffer(string: "Hello, World!")

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            isHello = head.method == .GET && head.uri == "/hello"
            if head.method == .POST && head.uri == "/upload" {
                let digest = EVP_MD_CTX_new()!
                EVP_DigestInit_ex(digest, EVP_sha256(), nil)
                upload = (0, digest)
            }
        case .body(let buffer):
            guard let (count, digest) = upload else { return }
            buffer.withUnsafeReadableBytes { _ = EVP_DigestUpdate(digest, $0.baseAddress, $0.count) }
            upload = (count + buffer.readableBytes, digest)
        case .end:
            let body: ByteBuffer
            let status: HTTPResponseStatus
            if let (count, digest) = upload {
                upload = nil
                var bytes = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
                var length: UInt32 = 0
                EVP_DigestFinal_ex(digest, &bytes, &length)
                EVP_MD_CTX_free(digest)
                let digits = Array("0123456789abcdef")
                let hex = String(bytes[..<Int(length)].flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 0x0F)]] })
                (body, status) = (ByteBuffer(string: "received \(count) sha256 \(hex)\n"), .ok)
            } else {
                (body, status) = isHello ? (greeting, .ok) : (ByteBuffer(string: "not found\n"), .notFound)
            }
            var headers = HTTPHeaders()
            headers.add(name: "content-type", value: "text/plain")
            headers.add(name: "content-length", value: String(body.readableBytes))
            context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http2, status: status, headers: headers))), promise: nil)
            context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        if let (_, digest) = upload { EVP_MD_CTX_free(digest) }  // a stream reset mid-upload
        upload = nil
    }
}

var port = 0
var certificatePath: String?
var keyPath: String?
var arguments = CommandLine.arguments.dropFirst().makeIterator()
while let argument = arguments.next() {
    switch argument {
    case "--port": port = Int(arguments.next() ?? "0") ?? 0
    case "--tls-cert": certificatePath = arguments.next()
    case "--tls-key": keyPath = arguments.next()
    default: break
    }
}

/// The TLS context (ALPN h2) when both --tls-cert and --tls-key were given.
let tls: NIOSSLContext? = try {
    guard let certificatePath, let keyPath else { return nil }
    let chain = try NIOSSLCertificate.fromPEMFile(certificatePath).map { NIOSSLCertificateSource.certificate($0) }
    let key = try NIOSSLPrivateKey(file: keyPath, format: .pem)
    var configuration = TLSConfiguration.makeServerConfiguration(certificateChain: chain, privateKey: .privateKey(key))
    configuration.applicationProtocols = ["h2"]
    return try NIOSSLContext(configuration: configuration)
}()

let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
let channel = try ServerBootstrap(group: group)
    .serverChannelOption(.backlog, value: 1024)
    .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
    .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
    .childChannelInitializer { channel in
        channel.eventLoop.makeCompletedFuture {
            if let tls { try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: tls)) }
            _ = try channel.pipeline.syncOperations.configureHTTP2Pipeline(
                mode: .server, connectionConfiguration: .init(), streamConfiguration: .init()
            ) { stream in
                stream.eventLoop.makeCompletedFuture {
                    try stream.pipeline.syncOperations.addHandler(HTTP2FramePayloadToHTTP1ServerCodec())
                    try stream.pipeline.syncOperations.addHandler(HelloHandler())
                }
            }
        }
    }
    .bind(host: "127.0.0.1", port: port).wait()
print("listening on 127.0.0.1:\(channel.localAddress?.port ?? port)")
fflush(nil)
try channel.closeFuture.wait()
