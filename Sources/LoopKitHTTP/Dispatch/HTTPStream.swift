import HTTPTypes
import LoopKit

/// What a codec gives the dispatcher (``HTTPDispatcher``) for one stream of requests: the exchange it
/// holds for the request in flight, and the few things the dispatcher asks of it (encode a response,
/// pause reading while a handler runs, come back to the loop, hand the connection over). The HTTP/1
/// connection (``HTTPConnection``) is one stream serving its requests one at a time; an HTTP/2 codec's
/// streams will be others.
///
/// Loop-confined: every requirement is called on the stream's loop thread, except that a conformer is
/// `Sendable` so the dispatcher's tasks (which run on the same loop's executor) can hold it.
protocol HTTPStream: AnyObject, Sendable {
    /// The server's presence on the stream's loop: router, configuration, logger, task start.
    var context: HTTPLoopContext { get }
    /// The exchange of the request being answered: the dispatcher's alone (nil between requests).
    var exchange: HTTPExchange? { get set }
    /// The stream's ended exchange, kept for its next request to begin in (``HTTPExchange/begin(_:route:unrouted:context:reusing:)``).
    var spareExchange: HTTPExchange? { get set }
    /// The stream has ended (the client went, or the protocol was switched): nothing more is written.
    var isClosed: Bool { get }
    /// The current response's body bytes handed to the codec so far.
    var responseBodyBytes: Int { get set }

    /// Runs `body` on the loop thread: inline when already there, else queued.
    func onLoop(_ body: @escaping @Sendable (Self) -> Void)
    /// A handler runs in a task: the stream reads no further requests meanwhile.
    func pauseReading()
    /// Ends the stream at once (a streamed body failed).
    func abort()
    /// Encodes a response with a body of bytes, then ends it; `echoedID` goes out unless `fields` carry
    /// its field already. `encoded`, when given, holds the lines of `fields` made before (HTTP/1 copies
    /// them).
    func writeResponse(status: HTTPResponse.Status, fields: HTTPFields, encoded: HTTPEncodedFields?, body: Bytes, isHead: Bool,
                       version: HTTPVersion, echoedID: HTTPEchoedRequestID?)
    /// Encodes the head of a response whose body streams; returns the body's writer (nil: no body, ended).
    func writeStreamedResponseHead(status: HTTPResponse.Status, fields: HTTPFields, isHead: Bool, version: HTTPVersion,
                                   echoedID: HTTPEchoedRequestID?, watchesClient: Bool) -> HTTPBodyWriter?
    /// The streamed body's writer returned: end the body and the response.
    func finishStreamedBody(_ writer: HTTPBodyWriter)
    /// A callback-form route's responder, answering on this stream (through `slot` behind middleware).
    func responder(slot: HTTPResponseSlot?) -> HTTPResponder
    /// Writes the `101 Switching Protocols` bytes; false when the stream is closing or closed.
    func writeSwitchingProtocols(_ bytes: [UInt8]) -> Bool
    /// After the `101`: hands the connection to the protocol `upgrader` switches to, and starts it.
    func handOver<Upgrader: HTTPUpgrader>(to upgrader: Upgrader, acceptance: Upgrader.Acceptance, request: HTTPServerRequest)
}
