// A minimal swift-nio-http2 server, the NIO peer of LoopKitHTTP in `make bench-h2`: one event loop, GET /hello
// answered "Hello, World!" (13 bytes, text/plain) on every stream, anything else 404.
//
//   NIOHTTP2Peer [--port P] [--tls-cert FILE --tls-key FILE]
//
// Plain: HTTP/2 by prior knowledge (h2c) from the first byte. With a certificate: NIOSSL (BoringSSL) with ALPN
// offering h2 only. Each stream is a child channel (NIOHTTP2Handler's multiplexer) with
// HTTP2FramePayloadToHTTP1ServerCodec, so the handler sees HTTP/1-style request parts as NIO's examples do.
// Prints `listening on HOST:PORT` when ready.
import NIOCore
import NIOHTTP1
import NIOHTTP2
import NIOPosix
import NIOSSL

/// Answers each request at its end: /hello with the greeting, anything else 404. Runs on the stream's loop.
final class HelloHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private var isHello = false
    private let greeting = ByteBuffer(string: "Hello, World!")

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            isHello = head.method == .GET && head.uri == "/hello"
        case .body:
            break
        case .end:
            var headers = HTTPHeaders()
            let body = isHello ? greeting : ByteBuffer(string: "not found\n")
            headers.add(name: "content-type", value: "text/plain")
            headers.add(name: "content-length", value: String(body.readableBytes))
            context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http2, status: isHello ? .ok : .notFound, headers: headers))), promise: nil)
            context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        }
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
