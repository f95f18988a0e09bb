import NIOCore
import NIOHTTP1
import NIOPosix

/// The `nio-http` server of ``IdleConnectionServer``: SwiftNIO with NIOHTTP1's server pipeline holding
/// idle keep-alive connections, each of which has been answered one request.
///
/// One-thread `MultiThreadedEventLoopGroup`, `ServerBootstrap` with backlog 4096, each child channel
/// `configureHTTPServerPipeline()` plus ``HelloHandler`` (the shape of the `NIOHTTPPeer` executable's
/// handler: `/hello` answers "Hello, World!", anything else 404). The child channel initializer counts
/// the accepted connections, the handler the requests it answers (`Atomic`s).
extension IdleConnectionServer {
    static func startNIOHTTP() throws -> Server {
        let accepted = Counter()
        let served = Counter()
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let channel = try ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 4096)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                accepted.value.add(1, ordering: .relaxed)
                return channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    try channel.pipeline.syncOperations.addHandler(HelloHandler(served: served))
                }
            }
            .bind(host: "127.0.0.1", port: 0).wait()
        return Server(port: channel.localAddress!.port!, accepted: { accepted.value.load(ordering: .relaxed) },
                      served: { served.value.load(ordering: .relaxed) }) {
            try? channel.close().wait()
            try? group.syncShutdownGracefully()
        }
    }
}

/// Answers `GET /hello` with "Hello, World!" (anything else 404), keeping the connection open unless the
/// request asks to close it; counts the requests it answers. Lives on its channel's loop.
private final class HelloHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let served: IdleConnectionServer.Counter
    /// The head of the request being read, until its end.
    private var head: HTTPRequestHead?

    init(served: IdleConnectionServer.Counter) {
        self.served = served
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head): self.head = head
        case .body: break
        case .end:
            guard let head else { return }
            self.head = nil
            respond(to: head, context: context)
            served.value.add(1, ordering: .relaxed)
        }
    }

    private func respond(to head: HTTPRequestHead, context: ChannelHandlerContext) {
        let found = head.uri == "/hello"
        let body = context.channel.allocator.buffer(string: found ? "Hello, World!" : "Not Found")
        var fields = HTTPHeaders()
        fields.add(name: "Content-Type", value: "text/plain")
        fields.add(name: "Content-Length", value: String(body.readableBytes))
        let keepAlive = head.isKeepAlive
        if !keepAlive { fields.add(name: "Connection", value: "close") }
        let response = HTTPResponseHead(version: head.version, status: found ? .ok : .notFound, headers: fields)
        context.write(wrapOutboundOut(.head(response)), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
        let written = context.eventLoop.makePromise(of: Void.self)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: written)
        if !keepAlive {
            written.futureResult.whenComplete { [channel = context.channel] _ in channel.close(promise: nil) }
        }
    }
}
