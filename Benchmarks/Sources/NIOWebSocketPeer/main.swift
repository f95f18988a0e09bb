// A minimal SwiftNIO WebSocket echo server, the peer of LoopKitHTTP's `/ws/echo` in `make bench-ws`:
// `GET /ws/echo` upgraded by NIOWebSocketServerUpgrader (NIOWebSocket's frame decoder and encoder, its
// automatic protocol-error handling), then a handler that writes each text or binary frame back unmasked,
// answers pings and the close handshake, and flushes once per read burst. No UTF-8 validation and no message
// assembly (each frame is echoed as it comes), no permessage-deflate. One event loop thread.
// Prints `listening on HOST:PORT` when ready.
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOWebSocket
#if canImport(Glibc)
import Glibc
#endif

/// Writes every data frame back; pong for ping; close for close.
final class WebSocketEchoHandler: ChannelInboundHandler {
    typealias InboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    private var closing = false

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame.opcode {
        case .text, .binary, .continuation:
            context.write(wrapOutboundOut(WebSocketFrame(fin: frame.fin, opcode: frame.opcode, data: frame.unmaskedData)),
                          promise: nil)
        case .ping:
            context.write(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .pong, data: frame.unmaskedData)), promise: nil)
        case .connectionClose:
            if closing {
                context.close(promise: nil)
            } else {
                closing = true
                let reply = WebSocketFrame(fin: true, opcode: .connectionClose, data: frame.unmaskedData)
                context.writeAndFlush(wrapOutboundOut(reply), promise: nil)
                context.close(promise: nil)
            }
        default:
            break
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        context.flush()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}

/// Answers anything that is not an upgrade with 404.
final class NotFoundHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .end = unwrapInboundIn(data) else { return }
        var headers = HTTPHeaders()
        headers.add(name: "content-length", value: "0")
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .notFound, headers: headers))),
                      promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
    }
}

let arguments = Array(CommandLine.arguments.dropFirst())
let port = arguments.firstIndex(of: "--port").flatMap { $0 + 1 < arguments.count ? Int(arguments[$0 + 1]) : nil } ?? 0

let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
let channel = try ServerBootstrap(group: group)
    .serverChannelOption(.backlog, value: 4096)
    .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
    .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
    .childChannelInitializer { channel in
        channel.eventLoop.makeCompletedFuture {
            let upgrader = NIOWebSocketServerUpgrader(
                shouldUpgrade: { channel, head in
                    channel.eventLoop.makeSucceededFuture(head.uri == "/ws/echo" ? HTTPHeaders() : nil)
                },
                upgradePipelineHandler: { channel, _ in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(WebSocketEchoHandler())
                    }
                }
            )
            try channel.pipeline.syncOperations.configureHTTPServerPipeline(
                withServerUpgrade: (upgraders: [upgrader], completionHandler: { context in
                    context.pipeline.removeHandler(name: "not-found", promise: nil)
                })
            )
            try channel.pipeline.syncOperations.addHandler(NotFoundHandler(), name: "not-found")
        }
    }
    .bind(host: "127.0.0.1", port: port).wait()
print("listening on 127.0.0.1:\(channel.localAddress?.port ?? port)")
fflush(nil)
try channel.closeFuture.wait()
