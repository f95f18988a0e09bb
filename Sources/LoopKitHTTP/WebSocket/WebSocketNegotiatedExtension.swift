/// The extension a WebSocket's engine uses, one case per ``WebSocketExtension`` LoopKitHTTP knows: the
/// engine calls the ``WebSocketExtensionCodec`` methods on this, and their dispatch is a `switch` the
/// compiler sees through, with no existential box or witness-table call per message (the size of the
/// codecs it holds: one word for each, as the engine held before).
///
/// Loop-confined, like the codecs it holds.
enum WebSocketNegotiatedExtension: WebSocketExtensionCodec {
    case perMessageDeflate(PerMessageDeflate.Codec)

    func outbound(_ payload: UnsafeRawBufferPointer) -> [UInt8]? {
        switch self {
        case .perMessageDeflate(let codec): codec.outbound(payload)
        }
    }

    func inbound(_ piece: UnsafeRawBufferPointer, into output: inout [UInt8], limit: Int) throws(WebSocketViolation) {
        switch self {
        case .perMessageDeflate(let codec): try codec.inbound(piece, into: &output, limit: limit)
        }
    }

    func inboundEnded(into output: inout [UInt8], limit: Int) throws(WebSocketViolation) {
        switch self {
        case .perMessageDeflate(let codec): try codec.inboundEnded(into: &output, limit: limit)
        }
    }
}
