import HTTPTypes
import LoopKitNet

/// A response as a handler returns it: the head and the body.
public struct HTTPServerResponse: Sendable {
    /// The status.
    public var status: HTTPResponse.Status
    /// The fields; the server adds `Date`, `Content-Length` (or chunked framing) and `Connection`.
    public var headerFields: HTTPFields {
        get { fields }
        set {
            fields = newValue
            encodedFields = nil
        }
        _modify {
            encodedFields = nil  // any change through the property: the lines made before no longer tell the fields
            yield &fields
        }
    }
    private var fields: HTTPFields
    /// The HTTP/1 field lines of ``headerFields``, made once for many responses (a kept file's): written
    /// as they are instead of the fields one by one. Dropped by any change of ``headerFields``.
    private(set) var encodedFields: HTTPEncodedFields?
    /// The body.
    public var body: HTTPResponseBody

    /// Status and fields as one swift-http-types value, built when read and taken apart when set: the
    /// response keeps ``status`` and ``headerFields`` apart, so that a response is encoded without an
    /// `HTTPResponse` made (its `:status` formatted into a string) and its status parsed back out of it.
    public var head: HTTPResponse {
        get { HTTPResponse(status: status, headerFields: headerFields) }
        set {
            status = newValue.status
            headerFields = newValue.headerFields
        }
    }

    /// A response with this status, fields and body.
    ///
    /// - Parameters:
    ///   - status: The status.
    ///   - headerFields: The fields.
    ///   - body: The body (empty by default).
    public init(status: HTTPResponse.Status, headerFields: HTTPFields = [:], body: HTTPResponseBody = .empty) {
        self.status = status
        self.fields = headerFields
        self.body = body
    }

    /// A response whose fields come with their HTTP/1 lines (`encoded`, made from `encoded.fields`).
    init(status: HTTPResponse.Status, encoded: HTTPEncodedFields, body: HTTPResponseBody) {
        self.status = status
        self.fields = encoded.fields
        self.encodedFields = encoded
        self.body = body
    }

    /// A `text/plain; charset=utf-8` response.
    ///
    /// ```swift
    /// return .text("moved", status: .created, headerFields: [.location: "/todos/7"])
    /// ```
    ///
    /// - Parameters:
    ///   - text: The body.
    ///   - status: The status (200 by default).
    ///   - headerFields: More fields (a `Location`, a `Cache-Control`); a `Content-Type` among them replaces
    ///     the plain-text one.
    public static func text(_ text: String, status: HTTPResponse.Status = .ok, headerFields: HTTPFields = [:]) -> HTTPServerResponse {
        HTTPServerResponse(status: status, headerFields: fields(plainTextFields, adding: headerFields), body: .bytes(Bytes(text)))
    }

    /// A response of `bytes` as they are, with `contentType` (`application/octet-stream` by default).
    ///
    /// - Parameters:
    ///   - bytes: The body.
    ///   - status: The status (200 by default).
    ///   - contentType: The body's `Content-Type`.
    ///   - headerFields: More fields; a `Content-Type` among them replaces `contentType`.
    public static func bytes(_ bytes: Bytes, status: HTTPResponse.Status = .ok, contentType: String = "application/octet-stream",
                             headerFields: HTTPFields = [:]) -> HTTPServerResponse {
        HTTPServerResponse(status: status, headerFields: fields([.contentType: contentType], adding: headerFields), body: .bytes(bytes))
    }

    /// `base` with `extra` added; a field of `extra` named in `base` replaces it. The shared `base` itself
    /// when `extra` is empty (no copy: the common case costs nothing).
    static func fields(_ base: HTTPFields, adding extra: HTTPFields) -> HTTPFields {
        guard !extra.isEmpty else { return base }
        var fields = base
        for name in Set(extra.map(\.name)) { fields[values: name] = extra[values: name] }
        return fields
    }

    /// `Content-Type: text/plain; charset=utf-8`, built once and shared (a copy is a retain): a fields
    /// literal built per response cost about 800 instructions of a keep-alive `/hello`.
    static let plainTextFields: HTTPFields = [.contentType: "text/plain; charset=utf-8"]
}

/// The body of a response: bytes known up front, or a stream written with backpressure.
public struct HTTPResponseBody: Sendable {
    enum Storage: Sendable {
        case bytes(Bytes)
        /// `watchesClient`: an event stream. The connection keeps reading while the body streams, so that a
        /// client that goes away is noticed at once (an event stream waits for events, not for the client),
        /// and graceful shutdown ends the stream rather than wait for it.
        case stream(@Sendable (HTTPBodyWriter) async throws -> Void, watchesClient: Bool)
    }

    /// A streamed body's writer, and whether it is an event stream (`Storage.stream`'s payload).
    struct Streamed: Sendable {
        let write: @Sendable (HTTPBodyWriter) async throws -> Void
        let watchesClient: Bool
    }

    /// The bytes of a body known up front (empty for a streamed body).
    ///
    /// Two stored properties rather than the `Storage` enum: the dispatcher reads the bytes in place and
    /// tests `streamed` for nil, where a switch over a borrowed enum copied the whole body and destroyed
    /// the copy (about 270 instructions a request).
    let bytes: Bytes
    /// A streamed body's writer; nil when ``bytes`` is the body.
    let streamed: Streamed?

    init(storage: Storage) {
        switch storage {
        case .bytes(let bytes):
            self.bytes = bytes
            streamed = nil
        case .stream(let write, let watchesClient):
            bytes = Bytes()
            streamed = Streamed(write: write, watchesClient: watchesClient)
        }
    }

    /// The body as one enum, for code that switches on its kind.
    var storage: Storage {
        if let streamed { return .stream(streamed.write, watchesClient: streamed.watchesClient) }
        return .bytes(bytes)
    }

    /// No body (`Content-Length: 0`).
    public static let empty = HTTPResponseBody(storage: .bytes(Bytes()))

    /// These bytes, sent with `Content-Length`: a body of 2 KiB or more is sent from its own storage
    /// (queued by reference, never copied), so a body built once (a file, a rendered page) is shared by
    /// every response that sends it, and a slice sends exactly its bytes.
    /// - Parameter bytes: The body (an array literal works too: `.bytes([0x68, 0x69])`).
    public static func bytes(_ bytes: Bytes) -> HTTPResponseBody { HTTPResponseBody(storage: .bytes(bytes)) }

    /// A copy of these bytes (an array, `Data`, a string's `utf8` view), sent with `Content-Length`: a
    /// convenience for ``bytes(_:)-(Bytes)``, which it calls with `Bytes(bytes)`.
    /// - Parameter bytes: The body; copied once.
    public static func bytes(_ bytes: some Sequence<UInt8>) -> HTTPResponseBody {
        HTTPResponseBody(storage: .bytes(Bytes(bytes)))
    }

    /// This text as UTF-8, sent with `Content-Length`.
    /// - Parameter text: The body.
    public static func string(_ text: String) -> HTTPResponseBody { HTTPResponseBody(storage: .bytes(Bytes(text))) }

    /// A body written by `write`, sent chunked (or, when the head has a `Content-Length`, framed by it:
    /// `write` must then write exactly that many bytes, or the connection is closed at the end; a file's
    /// body is sent so); `write` runs as a task on the connection's loop and each
    /// ``HTTPBodyWriter/write(_:)-(Bytes)`` suspends while the connection's pending output is above its high-water mark.
    /// The task is cancelled when the connection closes.
    ///
    /// - Parameter write: Writes the body; returning ends it, throwing aborts the connection.
    public static func stream(_ write: @escaping @Sendable (HTTPBodyWriter) async throws -> Void) -> HTTPResponseBody {
        HTTPResponseBody(storage: .stream(write, watchesClient: false))
    }
}
