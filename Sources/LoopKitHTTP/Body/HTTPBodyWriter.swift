import LoopKit
import LoopKitNet

/// Writes a streamed response body, chunk by chunk, with backpressure from the connection.
///
/// Handed to the closure of ``HTTPResponseBody/stream(_:)``, which runs as a task on the connection's
/// loop. Call its methods from that task (on the loop's thread). It is `@unchecked Sendable` because it
/// is handed to that task; it is used only on the connection's loop.
public final class HTTPBodyWriter: @unchecked Sendable {  // loop-confined: every method checks the thread
    /// The codec the body goes out through: an HTTP/1 connection (chunked, or raw for HTTP/1.0), or an
    /// HTTP/2 stream (DATA frames as the peer's window allows).
    private enum Target {
        case http1(HTTPConnection, chunked: Bool)
        case http2(HTTP2Stream)
        /// A compressed body (``CompressionMiddleware``): each write is encoded, flushed, and goes out
        /// through the writer of the codec.
        case encoded(HTTPBodyWriter, any HTTPContentEncoder)
    }
    private let target: Target

    /// HTTP/1.1's chunked coding frames the body (false for HTTP/1.0's raw body and for HTTP/2).
    var chunked: Bool {
        if case .http1(_, let chunked) = target { return chunked }
        return false
    }

    /// The length the response's `Content-Length` declared (HTTP/1: the body is framed by it); nil when
    /// the body is chunked or ends with the connection.
    let declaredLength: Int?

    init(connection: HTTPConnection, chunked: Bool, declaredLength: Int? = nil) {
        target = .http1(connection, chunked: chunked)
        self.declaredLength = declaredLength
    }

    init(stream: HTTP2Stream) {
        target = .http2(stream)
        declaredLength = nil
    }

    /// A writer that compresses what is written with `encoder` and writes it to `inner`.
    init(encodingInto inner: HTTPBodyWriter, with encoder: any HTTPContentEncoder) {
        target = .encoded(inner, encoder)
        declaredLength = nil
    }

    /// The loop the connection lives on, where the writing task runs.
    public var loop: EventLoop {
        switch target {
        case .http1(let connection, _): connection.context.loop
        case .http2(let stream): stream.context.loop
        case .encoded(let inner, _): inner.loop
        }
    }

    /// Whether the connection's unsent output is below its high-water mark: a write now would not have
    /// to wait. False once the client has gone. Loop thread.
    var hasRoom: Bool {
        switch target {
        case .http1(let connection, _):
            !connection.isClosed && connection.tcp.bufferedOutputCount < connection.context.configuration.writeHighWaterMark
        case .http2(let stream):
            stream.hasRoom
        case .encoded(let inner, _):
            inner.hasRoom
        }
    }

    /// Writes `bytes` as one chunk; suspends while the connection's unsent output is above its high-water
    /// mark (the client reads slower than the handler writes).
    ///
    /// From 2 KiB up the bytes are sent from their own storage (no copy), held until the socket has taken
    /// them, between the chunk's size line and its CRLF in one `writev`; smaller ones are copied with their
    /// framing, which costs less than the extra `iovec`s.
    ///
    /// - Parameter bytes: The bytes (a request body's chunk, say); an empty write does nothing.
    /// - Throws: ``HTTPServerError/connectionClosed`` once the client has gone.
    ///
    /// Call on the connection's loop (from the streaming task).
    public func write(_ bytes: Bytes) async throws {
        if bytes.count >= HTTPConnection.bodyCopyThreshold {
            try appendByReference(bytes)
        } else {
            try append { bytes.withUnsafeBytes($0) }
        }
        try await waitForRoom()
    }

    /// Writes these bytes (an array, `Data`, a string's `utf8` view) as one chunk, with backpressure as
    /// ``write(_:)-(Bytes)``: a convenience that copies them into the connection's output.
    ///
    /// - Parameter bytes: The bytes; an empty write does nothing.
    /// - Throws: ``HTTPServerError/connectionClosed`` once the client has gone.
    ///
    /// Call on the connection's loop (from the streaming task).
    public func write(_ bytes: some Sequence<UInt8>) async throws {
        if let lent = bytes.withContiguousStorageIfAvailable({ buffer in Result { try append { $0(UnsafeRawBufferPointer(buffer)) } } }) {
            try lent.get()
        } else {
            let copied = Bytes(bytes)
            try append { copied.withUnsafeBytes($0) }
        }
        try await waitForRoom()
    }

    /// Writes the UTF-8 bytes of `text` as one chunk, with backpressure as ``write(_:)-(Bytes)``.
    ///
    /// - Parameter text: The text.
    /// - Throws: ``HTTPServerError/connectionClosed`` once the client has gone.
    ///
    /// Call on the connection's loop (from the streaming task).
    public func write(_ text: String) async throws {
        var text = text
        try text.withUTF8 { utf8 in try append { $0(UnsafeRawBufferPointer(utf8)) } }
        try await waitForRoom()
    }

    /// Appends `bytes` as one chunk and sends it without waiting for the output to drain (a keep-alive
    /// comment from a timer). Does nothing once the client has gone. Loop thread.
    func writeWithoutWaiting(_ bytes: [UInt8]) {
        do {
            try append { bytes.withUnsafeBytes($0) }
        } catch {
            // The client has gone: the streaming task learns it at its next write, or by cancellation.
        }
    }

    /// Writes the bytes `lend` lends as one chunk (or raw, for HTTP/1.0), serialised straight into the
    /// connection's output.
    private func append(_ lend: ((UnsafeRawBufferPointer) -> Void) -> Void) throws {
        if case .encoded(let inner, let encoder) = target {
            var output: [Bytes] = []
            lend { raw in if !raw.isEmpty { encoder.encode(raw, flush: true, into: &output) } }
            for bytes in output { try inner.appendOutput(bytes) }
            return
        }
        guard case .http1(let connection, _) = target else {
            guard case .http2(let stream) = target, !stream.isClosed else { throw HTTPServerError.connectionClosed }
            lend { raw in stream.appendBody(Bytes(copying: raw)) }
            return
        }
        guard !connection.isClosed else { throw HTTPServerError.connectionClosed }
        let chunked = chunked
        var overrun = false
        lend { raw in
            if let declaredLength, connection.responseBodyBytes + raw.count > declaredLength {
                overrun = true
                return
            }
            guard !raw.isEmpty else { return }
            connection.writeEncoded(estimate: chunked ? HTTPResponseEncoder.chunkCapacity(for: raw.count) : raw.count) { encoder in
                if chunked { encoder.appendChunk(raw) } else { encoder.appendBody(raw) }
            }
            connection.responseBodyBytes += raw.count
        }
        if overrun { throw overrunning(connection) }
    }

    /// More bytes than the declared `Content-Length`: the connection is closed (they would be read as the
    /// next response) and the writer told.
    private func overrunning(_ connection: HTTPConnection) -> HTTPServerError {
        connection.abort()
        return HTTPServerError.connectionClosed
    }

    /// Sends `bytes` as one chunk (or raw, for HTTP/1.0) from their own storage: the size line is serialised
    /// into the connection's output, the data and the chunk's CRLF follow by reference.
    private func appendByReference(_ bytes: Bytes) throws {
        if case .encoded = target { return try append { bytes.withUnsafeBytes($0) } }
        guard case .http1(let connection, _) = target else {
            guard case .http2(let stream) = target, !stream.isClosed else { throw HTTPServerError.connectionClosed }
            stream.appendBody(bytes)
            return
        }
        guard !connection.isClosed else { throw HTTPServerError.connectionClosed }
        if let declaredLength, connection.responseBodyBytes + bytes.count > declaredLength { throw overrunning(connection) }
        if chunked {
            connection.writeEncoded(estimate: HTTPResponseEncoder.chunkSizeLineCapacity, followedBy: bytes,
                                    then: Self.chunkEnd) { $0.appendChunkSizeLine(bytes.count) }
        } else {
            connection.writeBody(bytes)
        }
        connection.responseBodyBytes += bytes.count
    }

    /// Sends `count` bytes of the file open at `descriptor` from `offset` with `sendfile(2)`, when the body
    /// goes straight to a plain socket framed by its declared length (HTTP/1 without TLS, not compressed,
    /// not chunked); returns the bytes sent (fewer than `count` when the file ended first), or nil when
    /// this writer cannot send files directly and the caller must read the file and write its bytes.
    ///
    /// - Throws: ``HTTPServerError/connectionClosed`` once the client has gone.
    ///
    /// Call on the connection's loop (from the streaming task).
    func sendFile(_ descriptor: Int32, from offset: Int64, count: Int64) async throws -> Int64? {
        guard case .http1(let connection, chunked: false) = target, let declaredLength,
              connection.tcp.sendsFilesDirectly else { return nil }
        guard !connection.isClosed else { throw HTTPServerError.connectionClosed }
        if Int64(connection.responseBodyBytes) + count > Int64(declaredLength) { throw overrunning(connection) }
        let sent: Int64
        do {
            sent = try await connection.tcp.sendFile(descriptor, from: offset, count: count)
        } catch {
            throw HTTPServerError.connectionClosed
        }
        connection.responseBodyBytes += Int(sent)
        return sent
    }

    /// The CRLF that ends every chunk sent by reference: one storage for all of them.
    private static let chunkEnd = Bytes("\r\n".utf8)

    /// Writes `bytes` as one chunk, from their own storage when they are large enough to be worth it.
    private func appendOutput(_ bytes: Bytes) throws {
        if bytes.count >= HTTPConnection.bodyCopyThreshold {
            try appendByReference(bytes)
        } else {
            try append { bytes.withUnsafeBytes($0) }
        }
    }

    /// Ends a compressed body: the rest of the encoder's output and the coding's trailer go out. Does
    /// nothing for a writer that does not compress. Loop thread.
    func finishEncoding() async throws {
        guard case .encoded(let inner, let encoder) = target else { return }
        var output: [Bytes] = []
        encoder.finish(into: &output)
        for bytes in output { try inner.appendOutput(bytes) }
        try await inner.waitForRoom()
    }

    /// Waits while the output is above the high-water mark.
    private func waitForRoom() async throws {
        if case .encoded(let inner, _) = target { return try await inner.waitForRoom() }
        guard case .http1(let connection, _) = target else {
            guard case .http2(let stream) = target else { return }
            try await stream.waitForRoom()
            return
        }
        do {
            try await connection.tcp.waitUntilWritable()
        } catch {
            throw HTTPServerError.connectionClosed
        }
        guard !connection.isClosed else { throw HTTPServerError.connectionClosed }
    }
}
