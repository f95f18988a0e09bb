import HTTPTypes
import LoopKitHTTP
import LoopKitNet

/// A WebSocket client for testing routes, over an ``HTTPTestClient``'s connection: in memory on a stepped
/// loop or live over a socket, with the same API.
///
/// ```swift
/// let client = try HTTPTestClient(router: router, mode: mode)
/// let socket = try client.webSocket("/ws/echo")
/// try socket.send("hello")
/// #expect(try socket.receive() == .text("hello"))
/// #expect(try socket.close() == .normalClosure)
/// ```
///
/// It masks what it sends (as a client must), reassembles fragmented messages, answers pings with pongs,
/// and reports the server's close frame as ``WebSocketTestClientError/closed(code:reason:)``. It does not
/// negotiate permessage-deflate unless the upgrade's fields ask for it (then compressed messages are
/// reported as ``WebSocketTestClientError/compressedMessage``).
///
/// Not `Sendable`: use it on the thread of its ``HTTPTestClient``.
public final class WebSocketTestClient {
    /// The `101 Switching Protocols` answer to the upgrade.
    public let upgradeResponse: HTTPTestResponse
    private let http: HTTPTestClient
    private var parser = WebSocketFrameParser(maxFrameSize: 1 << 26, requiresMask: false, allowsRSV1: true)
    private var received: [UInt8] = []
    private var fragments: (opcode: WebSocketOpcode, payload: [UInt8])?
    /// The server's close code and reason, once its close frame arrived.
    public private(set) var closeFrame: (code: WebSocketCloseCode?, reason: String)?
    private var sentClose = false
    private static let mask: [UInt8] = [0x37, 0xFA, 0x21, 0x3D]
    /// RFC 6455's sample nonce and the accept value it must produce.
    private static let key = "dGhlIHNhbXBsZSBub25jZQ=="
    private static let expectedAccept = "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="

    /// Upgrades `client`'s connection to a WebSocket on `path`.
    ///
    /// - Parameters:
    ///   - path: The route's path.
    ///   - client: The connection to upgrade; do not send HTTP requests on it afterwards.
    ///   - headerFields: More fields for the upgrade request.
    /// - Throws: ``WebSocketTestClientError/notUpgraded(_:)`` when the answer is not a valid `101`;
    ///   ``WebSocketTestClientError/notOverHTTP2`` in an HTTP/2 mode; what ``HTTPTestClient/execute(_:body:)`` throws.
    public init(_ path: String, through client: HTTPTestClient, headerFields: HTTPFields = [:]) throws {
        guard !client.mode.isHTTP2 else { throw WebSocketTestClientError.notOverHTTP2 }
        http = client
        var fields = headerFields
        fields[.upgrade] = "websocket"
        fields[.connection] = "Upgrade"
        fields[HTTPField.Name("Sec-WebSocket-Key")!] = Self.key
        fields[HTTPField.Name("Sec-WebSocket-Version")!] = "13"
        let response = try client.execute(.get, path, headerFields: fields)
        upgradeResponse = response
        guard response.status == .switchingProtocols,
              response.headerFields[HTTPField.Name("Sec-WebSocket-Accept")!] == Self.expectedAccept else {
            throw WebSocketTestClientError.notUpgraded(response)
        }
        received = client.takeReceivedBytes()
    }

    /// Sends a text message (one masked frame).
    public func send(_ text: String) throws {
        try sendFrame(WebSocketFrame(opcode: .text, payload: Array(text.utf8)))
    }

    /// Sends a binary message (one masked frame).
    public func send(_ bytes: Bytes) throws {
        try sendFrame(WebSocketFrame(opcode: .binary, payload: Array(bytes)))
    }

    /// Sends a ping with `payload` (at most 125 bytes); the server's pong is read and dropped by ``receive()``.
    public func ping(_ payload: Bytes = []) throws {
        try sendFrame(WebSocketFrame(opcode: .ping, payload: Array(payload)))
    }

    /// The next whole message from the server: in memory, stepping the loop until it has arrived; live,
    /// waiting for it.
    ///
    /// - Throws: ``WebSocketTestClientError/closed(code:reason:)`` when the server's close frame comes
    ///   first (or came before); ``WebSocketTestClientError/protocolViolation(_:)`` for a frame that breaks
    ///   RFC 6455; what ``HTTPTestClient/step()`` throws when nothing arrives.
    public func receive() throws -> WebSocketMessage {
        if let closeFrame { throw WebSocketTestClientError.closed(code: closeFrame.code, reason: closeFrame.reason) }
        while true {
            let closedByServer = http.isClosedByServer  // read first: every byte sent before the end is here then
            received += http.takeReceivedBytes()
            if let message = try nextMessageInBuffer() { return message }
            if let closeFrame { throw WebSocketTestClientError.closed(code: closeFrame.code, reason: closeFrame.reason) }
            if closedByServer { throw WebSocketTestClientError.closed(code: nil, reason: "") }
            try http.waitForBytes()
        }
    }

    /// Starts the close handshake with `code` and `reason`, and reads until the server's close frame.
    ///
    /// - Returns: The code the server closed with (nil for an empty close frame).
    /// - Throws: What ``receive()`` throws other than the close itself.
    @discardableResult
    public func close(_ code: WebSocketCloseCode = .normalClosure, reason: String = "") throws -> WebSocketCloseCode? {
        if !sentClose {
            sentClose = true
            try sendFrame(WebSocketFrame(opcode: .close, payload: Self.closePayload(code, reason)))
        }
        while closeFrame == nil {
            do {
                _ = try receive()
            } catch WebSocketTestClientError.closed {
                break
            }
        }
        return closeFrame?.code
    }

    private func sendFrame(_ frame: WebSocketFrame) throws {
        try http.send(Bytes(WebSocketFrameEncoder.encode(frame, maskKey: Self.mask)))
    }

    /// Parses the buffered bytes into frames until a whole message is there (answering pings, noting a
    /// close); nil when more bytes are needed.
    private func nextMessageInBuffer() throws -> WebSocketMessage? {
        while !received.isEmpty, closeFrame == nil {
            let (event, consumed): (WebSocketFrameParser.Event, Int)
            do {
                (event, consumed) = try received.withUnsafeBytes { bytes in
                    try Result { () throws(WebSocketViolation) in try parser.parse(bytes) }.get()
                }
            } catch {
                throw WebSocketTestClientError.protocolViolation("\(error)")
            }
            received.removeFirst(consumed)
            guard case .frame(let frame) = event else { return nil }
            if let message = try handle(frame) { return message }
        }
        return nil
    }

    private func handle(_ frame: WebSocketFrame) throws -> WebSocketMessage? {
        switch frame.opcode {
        case .ping:
            if !sentClose { try sendFrame(WebSocketFrame(opcode: .pong, payload: frame.payload)) }
            return nil
        case .pong:
            return nil
        case .close:
            let payload = frame.payload
            let code = payload.count >= 2 ? WebSocketCloseCode(rawValue: UInt16(payload[0]) << 8 | UInt16(payload[1])) : nil
            closeFrame = (code, payload.count > 2 ? String(decoding: payload[2...], as: UTF8.self) : "")
            if !sentClose {  // answer it, as RFC 6455 §5.5.1 asks (the server may have closed the socket already)
                sentClose = true
                do { try sendFrame(WebSocketFrame(opcode: .close, payload: Array(payload.prefix(2)))) } catch {}
            }
            return nil
        default:
            if frame.rsv1 { throw WebSocketTestClientError.compressedMessage }
            if frame.opcode == .continuation {
                guard var message = fragments else { throw WebSocketTestClientError.protocolViolation("a continuation frame with no message under way") }
                message.payload += frame.payload
                fragments = frame.fin ? nil : message
                return frame.fin ? try Self.message(message.opcode, message.payload) : nil
            }
            guard frame.fin else {
                fragments = (frame.opcode, frame.payload)
                return nil
            }
            return try Self.message(frame.opcode, frame.payload)
        }
    }

    private static func message(_ opcode: WebSocketOpcode, _ payload: [UInt8]) throws -> WebSocketMessage {
        guard opcode == .text else { return .binary(Bytes(payload)) }
        guard let text = String(validating: payload, as: UTF8.self) else {
            throw WebSocketTestClientError.protocolViolation("a text message that is not UTF-8")
        }
        return .text(text)
    }

    private static func closePayload(_ code: WebSocketCloseCode, _ reason: String) -> [UInt8] {
        [UInt8(code.rawValue >> 8), UInt8(code.rawValue & 0xFF)] + Array(reason.utf8.prefix(123))
    }
}

/// What a ``WebSocketTestClient`` reports.
public enum WebSocketTestClientError: Error, Equatable, CustomStringConvertible {
    /// The upgrade was not answered with a valid `101` (the answer is attached).
    case notUpgraded(HTTPTestResponse)
    /// The server closed the WebSocket (its close frame's code, nil when it had none, and reason).
    case closed(code: WebSocketCloseCode?, reason: String)
    /// The server sent a frame that breaks RFC 6455.
    case protocolViolation(String)
    /// A compressed message arrived, and this client does not inflate.
    case compressedMessage
    /// The client speaks HTTP/2 (``HTTPTestMode/inMemoryHTTP2``, ``HTTPTestMode/liveHTTP2``), and the server
    /// does not offer WebSocket over HTTP/2 (RFC 8441's extended CONNECT): test WebSocket routes in an
    /// HTTP/1.1 mode.
    case notOverHTTP2

    public var description: String {
        switch self {
        case .notUpgraded(let response): "the upgrade was answered \(response.status), not 101 with the right Sec-WebSocket-Accept"
        case .closed(let code, let reason): "the server closed the WebSocket (\(code.map { "\($0)" } ?? "no code")\(reason.isEmpty ? "" : ": \(reason)"))"
        case .protocolViolation(let what): "the server broke RFC 6455: \(what)"
        case .compressedMessage: "a compressed message arrived; this client does not inflate"
        case .notOverHTTP2: "no WebSocket over HTTP/2: the server does not offer RFC 8441's extended CONNECT; use an HTTP/1.1 mode (.inMemory, .live)"
        }
    }
}

extension HTTPTestClient {
    /// Upgrades this client's connection to a WebSocket on `path`; see ``WebSocketTestClient``.
    ///
    /// - Parameters:
    ///   - path: The route's path.
    ///   - headerFields: More fields for the upgrade request.
    /// - Returns: The WebSocket client, over this connection.
    /// - Throws: What ``WebSocketTestClient/init(_:through:headerFields:)`` throws.
    public func webSocket(_ path: String, headerFields: HTTPFields = [:]) throws -> WebSocketTestClient {
        try WebSocketTestClient(path, through: self, headerFields: headerFields)
    }
}

// MARK: From async code

extension HTTPTestClient {
    /// Upgrades this client's connection to a WebSocket on `path`, as ``webSocket(_:headerFields:)``, without
    /// blocking a thread: for `async` tests, across any `await`.
    ///
    /// ```swift
    /// let socket = try await client.webSocket("/ws/echo")
    /// try await socket.send("hello")
    /// #expect(try await socket.receive() == .text("hello"))
    /// ```
    nonisolated(nonsending) public func webSocket(_ path: String, headerFields: HTTPFields = [:]) async throws -> WebSocketTestClient {
        try await onClientThread { client in Unchecked(try client.webSocket(path, headerFields: headerFields)) }.value
    }
}

extension WebSocketTestClient {
    /// Runs `body` on the thread of the HTTP client under this socket, suspending the caller.
    nonisolated(nonsending) private func onClientThread<T>(_ body: @escaping (WebSocketTestClient) throws -> T) async throws -> T {
        let socket = Unchecked(self)  // the caller is suspended while the client's thread uses it
        return try await http.onClientThread { _ in try body(socket.value) }
    }

    /// Sends a text message, as ``send(_:)-(String)``, from `async` code.
    nonisolated(nonsending) public func send(_ text: String) async throws {
        try await onClientThread { try $0.send(text) }
    }

    /// Sends a binary message, as ``send(_:)-(Bytes)``, from `async` code.
    nonisolated(nonsending) public func send(_ bytes: Bytes) async throws {
        try await onClientThread { try $0.send(bytes) }
    }

    /// The next whole message, as ``receive()``, suspending until it has arrived.
    nonisolated(nonsending) public func receive() async throws -> WebSocketMessage {
        try await onClientThread { try $0.receive() }
    }

    /// Closes with `code`, as ``close(_:reason:)``, suspending for the server's answer.
    @discardableResult
    nonisolated(nonsending) public func close(_ code: WebSocketCloseCode = .normalClosure, reason: String = "") async throws -> WebSocketCloseCode? {
        try await onClientThread { try $0.close(code, reason: reason) }
    }
}
