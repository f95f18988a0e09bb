/// The permessage-deflate extension (RFC 7692) as negotiated: the client's offers read, the first one
/// the server can honour accepted, and the `Sec-WebSocket-Extensions` answer built.
///
/// A ``WebSocketExtension``; its codec compresses each outbound message and inflates each inbound one
/// on zlib (``WebSocketDeflater``, ``WebSocketInflater``).
///
/// A value type: safe from any thread.
struct PerMessageDeflate: WebSocketExtension, Hashable, Sendable {
    /// The server resets its compressor after each message.
    var serverNoContextTakeover = false
    /// The client resets its compressor after each message (so the server may reset its decompressor).
    var clientNoContextTakeover = false
    /// The server's compression window, in bits (9–15; zlib's raw deflate has no 8).
    var serverMaxWindowBits = 15
    /// The client asked for `server_max_window_bits` (so the answer states it).
    private var statesServerWindow = false

    /// The `Sec-WebSocket-Extensions` value of the 101.
    var responseValue: String {
        var value = "permessage-deflate"
        if serverNoContextTakeover { value += "; server_no_context_takeover" }
        if clientNoContextTakeover { value += "; client_no_context_takeover" }
        if statesServerWindow { value += "; server_max_window_bits=\(serverMaxWindowBits)" }
        return value
    }

    static func negotiate(_ offers: [String], configuration: WebSocketConfiguration) -> PerMessageDeflate? {
        guard configuration.allowsCompression else { return nil }
        return negotiate(offers, serverNoContextTakeover: configuration.serverNoContextTakeover)
    }

    func makeCodec() -> Codec {
        Codec(deflater: WebSocketDeflater(windowBits: serverMaxWindowBits, noContextTakeover: serverNoContextTakeover),
              inflater: WebSocketInflater(noContextTakeover: clientNoContextTakeover))
    }

    /// One connection's compressor and decompressor. Loop-confined.
    struct Codec: WebSocketExtensionCodec {
        let deflater: WebSocketDeflater
        let inflater: WebSocketInflater

        /// An empty message goes uncompressed.
        func outbound(_ payload: UnsafeRawBufferPointer) -> [UInt8]? {
            payload.isEmpty ? nil : deflater.compress(payload)
        }

        func inbound(_ piece: UnsafeRawBufferPointer, into output: inout [UInt8], limit: Int) throws(WebSocketViolation) {
            try inflater.inflate(piece, into: &output, limit: limit)
        }

        func inboundEnded(into output: inout [UInt8], limit: Int) throws(WebSocketViolation) {
            try inflater.finishMessage(into: &output, limit: limit)
        }
    }

    /// Picks the first permessage-deflate offer the server can accept (RFC 7692 §5, §7.1).
    ///
    /// An offer is declined when a parameter is unknown, repeated, or has a bad value
    /// (`server_max_window_bits` must be 8–15, `client_max_window_bits` empty or 8–15, the
    /// `…_no_context_takeover` parameters empty), or when it asks for an 8-bit server window.
    ///
    /// - Parameters:
    ///   - values: The request's `Sec-WebSocket-Extensions` values.
    ///   - serverNoContextTakeover: The server resets its compressor after each message even unasked.
    /// - Returns: The accepted parameters, or nil (no compression).
    static func negotiate(_ values: [String], serverNoContextTakeover: Bool) -> PerMessageDeflate? {
        for offer in values.flatMap({ $0.split(separator: ",") }) {
            let parts = offer.split(separator: ";").map { $0.trimmingWhitespace() }
            guard parts.first?.lowercased() == "permessage-deflate" else { continue }
            if var accepted = accept(parts.dropFirst()) {
                accepted.serverNoContextTakeover = accepted.serverNoContextTakeover || serverNoContextTakeover
                return accepted
            }
        }
        return nil
    }

    private static func accept(_ parameters: ArraySlice<String>) -> PerMessageDeflate? {
        var result = PerMessageDeflate()
        var seen = Set<String>()
        for parameter in parameters {
            let pieces = parameter.split(separator: "=", maxSplits: 1)
            let name = pieces[0].trimmingWhitespace().lowercased()
            var value: String? = pieces.count > 1 ? pieces[1].trimmingWhitespace() : nil
            if let quoted = value, quoted.count >= 2, quoted.hasPrefix("\""), quoted.hasSuffix("\"") {
                value = String(quoted.dropFirst().dropLast())
            }
            guard seen.insert(name).inserted else { return nil }
            switch name {
            case "server_no_context_takeover":
                guard value == nil else { return nil }
                result.serverNoContextTakeover = true
            case "client_no_context_takeover":
                guard value == nil else { return nil }
                result.clientNoContextTakeover = true
            case "server_max_window_bits":
                guard let bits = windowBits(value), bits >= 9 else { return nil }
                result.serverMaxWindowBits = bits
                result.statesServerWindow = true
            case "client_max_window_bits":
                guard value == nil || windowBits(value) != nil else { return nil }
                // The server's decompressor uses a 15-bit window, which reads any: no need to limit it.
            default:
                return nil
            }
        }
        return result
    }

    /// A window size in bits, 8–15, written as digits.
    private static func windowBits(_ value: String?) -> Int? {
        guard let value, !value.isEmpty, value.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), value.count <= 2,
              let bits = Int(value), (8...15).contains(bits) else { return nil }
        return bits
    }
}
