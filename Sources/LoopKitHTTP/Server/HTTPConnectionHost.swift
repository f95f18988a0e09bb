import Logging
import LoopKit
import LoopKitNet

/// Serves HTTP on connections handed to it, on one loop, without a listener: what an ``HTTPServer`` does
/// on each of its loops, for connections that do not come from a socket (LoopKitHTTPTesting's in-memory
/// client hands it the server end of an in-memory connection pair).
///
/// Everything runs as on a server's loop: the same router, parser, limits, timeouts (swept by a timer on
/// the loop, so virtual time fires them) and graceful shutdown. Loop-confined: create it and call it on
/// the loop's thread.
package final class HTTPConnectionHost {
    private let context: HTTPLoopContext

    /// Starts serving on `loop`.
    ///
    /// - Parameters:
    ///   - loop: The loop; the caller is on its thread.
    ///   - configuration: Limits and timeouts (address, port, backlog and TLS are not used).
    ///   - router: The routes.
    ///   - logger: The access log and errors.
    /// - Throws: ``EventLoopError/shutDown`` when the loop refuses work.
    package init(loop: EventLoop, configuration: HTTPServer.Configuration, router: HTTPRouter, logger: Logger) throws {
        context = HTTPLoopContext(loop: loop, configuration: configuration, router: router, logger: logger,
                                  tracing: HTTPTracing.resolve(configuration.tracer), gracefulShutdown: HTTPGracefulShutdown())
        // Made ids are `memory-1`, `memory-2`…: the same in every run (a server's also name its process and
        // its loop context, whose number depends on how many loops the process has made).
        context.requestIDs = HTTPRequestIDGenerator(fixedPrefix: "memory-")
        try context.start()
    }

    /// Serves `connection` as if a listener had accepted it.
    package func serve(_ connection: Connection) {
        context.registry.add(connection)
        context.accept(connection)
    }

    /// Handler tasks (async routes, chains with async middleware, whose body was collected) that have not
    /// answered yet; while one has not, an idle loop may still get its answer from another thread.
    package var handlerTasksInFlight: Int { context.handlerTasksInFlight }

    /// The loop's registry the connections are kept in, which other connections on the loop may share
    /// (a listener's, as on a server's loop). For tests.
    package var registry: ConnectionRegistry { context.registry }

    /// The connections being served.
    package var connectionCount: Int { context.connectionCount }

    /// What serves each connection now: an HTTP connection, or what an upgrade handed it to. For tests.
    var handlers: [(any ConnectionHandler)?] { context.handlers }

    /// Graceful shutdown, as ``HTTPServer/shutdown()`` does on one loop: idle connections close, the
    /// others finish their response; `onFinished` runs once none is left.
    package func shutdown(deadline: Duration, onFinished: @escaping @Sendable () -> Void) {
        context.shutdown(deadline: deadline, onFinished: onFinished)
    }
}

extension HTTPServer {
    /// The router the server was created with (for the test client, which serves it in memory).
    package var routes: HTTPRouter { router }
}
