import NIOCore
import NIOPosix

#if canImport(Glibc)
import Glibc
#endif

// The NIO peer of `LoopDemo udp-echo` (Benchmarks/udp-bench.sh): a DatagramBootstrap on one event loop that
// writes every datagram back to its sender, reading with recvmmsg (datagramVectorReadMessageCount, as
// LoopKit's batch) and flushing once per read batch (channelReadComplete).
//   NIOUDPEchoPeer [--host 127.0.0.1] [--port 0] [--batch 64]
// Prints "listening on HOST:PORT (udp)" once bound; runs until killed.

final class EchoHandler: ChannelInboundHandler, Sendable {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>
    typealias OutboundOut = AddressedEnvelope<ByteBuffer>

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        context.write(data, promise: nil)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        context.flush()
    }
}

var host = "127.0.0.1"
var port = 0
var batch = 64
var arguments = CommandLine.arguments.dropFirst().makeIterator()
while let argument = arguments.next() {
    switch argument {
    case "--host": host = arguments.next() ?? host
    case "--port": port = Int(arguments.next() ?? "") ?? port
    case "--batch": batch = Int(arguments.next() ?? "") ?? batch
    default: fatalError("unknown argument \(argument)")
    }
}

let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
let channel = try await DatagramBootstrap(group: group)
    .channelOption(.socketOption(.so_reuseaddr), value: 1)
    .channelOption(.datagramVectorReadMessageCount, value: batch)
    .channelOption(.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: 2048 * batch))
    .channelInitializer { channel in channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(EchoHandler()) } }
    .bind(host: host, port: port)
    .get()
print("listening on \(host):\(channel.localAddress?.port ?? 0) (udp)")
fflush(nil)  // all streams (stdout itself is not concurrency-safe to name): the script waits for this line
try await channel.closeFuture.get()
