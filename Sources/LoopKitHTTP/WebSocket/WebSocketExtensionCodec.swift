/// One connection's side of a negotiated ``WebSocketExtension``: it transforms each outbound message
/// and each inbound one, and claims RSV1 on the frames it transformed (the parser allows RSV1 only when
/// one is negotiated).
///
/// Loop-confined: held by one socket's engine, called on its loop's thread.
protocol WebSocketExtensionCodec {
    /// The payload to send for an outbound message, and RSV1 set on its frame; nil to send the message
    /// as it is.
    func outbound(_ payload: UnsafeRawBufferPointer) -> [UInt8]?

    /// The next piece of an inbound message whose first frame had RSV1, transformed onto `output`,
    /// which may not grow past `limit` bytes.
    /// - Throws: The violation that fails the connection (1007, 1009).
    func inbound(_ piece: UnsafeRawBufferPointer, into output: inout [UInt8], limit: Int) throws(WebSocketViolation)

    /// The inbound message's last frame was transformed: what it still holds, onto `output`.
    /// - Throws: The violation that fails the connection (1007, 1009).
    func inboundEnded(into output: inout [UInt8], limit: Int) throws(WebSocketViolation)
}
