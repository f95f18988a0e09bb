import LoopKit
import LoopKitNet
import Synchronization

/// Writes the events of a `text/event-stream` response (``HTTPServerResponse/events(keepAlive:_:)``),
/// with backpressure from the connection.
///
/// Handed to the closure of ``HTTPServerResponse/events(keepAlive:_:)``, which runs as a task on the
/// connection's loop: call its methods from that task. When the client goes away, the task is cancelled
/// (an `await` on anything cancellation-aware ends) and the next ``send(_:)`` throws
/// ``HTTPServerError/connectionClosed``.
public final class ServerSentEventWriter: Sendable {
    private let body: HTTPBodyWriter
    /// Set by every write, cleared by each keep-alive tick: a tick that finds it clear sends a comment.
    private let wroteSinceTick = Atomic<Bool>(false)

    /// The loop the connection lives on (and the writing task runs on).
    public var loop: EventLoop { body.loop }

    init(body: HTTPBodyWriter) {
        self.body = body
    }

    /// Whether an event written now would go out without waiting (see ``HTTPBodyWriter``). Loop thread.
    var hasRoom: Bool { body.hasRoom }

    /// Writes already encoded event bytes without waiting for the output to drain; the caller checked
    /// ``hasRoom``. Loop thread.
    func writeEncoded(_ bytes: [UInt8]) {
        wroteSinceTick.store(true, ordering: .relaxed)
        body.writeWithoutWaiting(bytes)
    }

    /// Sends `event`; suspends while the connection's unsent output is above its high-water mark (the
    /// client reads slower than events come).
    ///
    /// - Parameter event: The event.
    /// - Throws: ``HTTPServerError/connectionClosed`` once the client has gone; ``ServerSentEventError``
    ///   for an event that cannot be written (nothing is sent then, and the stream goes on).
    ///
    /// Call on the connection's loop (from the streaming task).
    public func send(_ event: ServerSentEvent) async throws {
        let bytes = try event.encodedArray()
        wroteSinceTick.store(true, ordering: .relaxed)
        try await body.write(bytes)
    }

    /// Sends a comment line, which clients ignore, with backpressure as ``send(_:)``.
    ///
    /// - Parameter text: The comment (line breaks become spaces).
    /// - Throws: ``HTTPServerError/connectionClosed`` once the client has gone.
    ///
    /// Call on the connection's loop (from the streaming task).
    public func comment(_ text: String) async throws {
        wroteSinceTick.store(true, ordering: .relaxed)
        try await body.write(ServerSentEvent.commentArray(text))
    }

    /// A keep-alive tick (a loop timer): a comment when nothing was written since the last tick. It does
    /// not wait for the output to drain: a few bytes on top of a full buffer are harmless. Loop thread.
    func keepAliveTick() {
        guard !wroteSinceTick.exchange(false, ordering: .relaxed) else { return }
        body.writeWithoutWaiting(ServerSentEvent.commentArray("keep-alive"))
    }
}
