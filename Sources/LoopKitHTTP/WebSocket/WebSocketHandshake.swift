import COpenSSL
import HTTPTypes

/// The opening handshake, server side (RFC 6455 §4.2): checks a client's upgrade request and builds the
/// `101 Switching Protocols` response.
///
/// Stateless: safe from any thread.
enum WebSocketHandshake {
    /// The GUID RFC 6455 §1.3 appends to the key before hashing.
    static let guid = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

    static let keyField = HTTPField.Name("Sec-WebSocket-Key")!
    static let versionField = HTTPField.Name("Sec-WebSocket-Version")!
    static let acceptField = HTTPField.Name("Sec-WebSocket-Accept")!
    static let extensionsField = HTTPField.Name("Sec-WebSocket-Extensions")!
    static let upgradeField = HTTPField.Name("Upgrade")!

    /// Checks the request's method, version and handshake fields.
    ///
    /// - Parameters:
    ///   - request: The request head.
    ///   - version: Its HTTP version.
    ///   - framing: How its body is framed (an upgrade request has none).
    /// - Returns: The client's `Sec-WebSocket-Key`, or the refusal to send: 400, or 426 with
    ///   `Sec-WebSocket-Version: 13` (and `Upgrade: websocket`) for a missing upgrade or a version other
    ///   than 13.
    static func validate(_ request: HTTPRequest, version: HTTPVersion, framing: HTTPBodyFraming) -> Result<String, Refusal> {
        guard request.method == .get, version.major == 1 && version.minor >= 1 else {
            return .failure(.badRequest("a WebSocket upgrade is a GET request over HTTP/1.1"))
        }
        guard framing == .none else { return .failure(.badRequest("a WebSocket upgrade request has no body")) }
        let fields = request.headerFields
        guard tokens(fields[values: upgradeField]).contains("websocket") else {
            return .failure(.upgradeRequired("this resource speaks WebSocket only: send Upgrade: websocket"))
        }
        guard tokens(fields[values: .connection]).contains("upgrade") else {
            return .failure(.badRequest("Connection: Upgrade is missing"))
        }
        let versions = fields[values: versionField]
        guard versions.count == 1, versions[0].trimmingWhitespace() == "13" else {
            return .failure(.upgradeRequired("only WebSocket version 13 is supported"))
        }
        let keys = fields[values: keyField]
        guard keys.count == 1, isValidKey(keys[0]) else {
            return .failure(.badRequest("Sec-WebSocket-Key must be 16 bytes in base64"))
        }
        return .success(keys[0])
    }

    /// A refused upgrade: the failure to answer instead, rendered by the server's error renderer.
    struct Refusal: Error {
        var error: HTTPError

        static func badRequest(_ text: String) -> Refusal {
            Refusal(error: HTTPError(.badRequest, text))
        }

        static func upgradeRequired(_ text: String) -> Refusal {
            Refusal(error: HTTPError(.upgradeRequired, text, headerFields: [versionField: "13", upgradeField: "websocket"]))
        }

        /// The response `renderer` gives it: the message as the body, the 426's fields kept.
        func response(_ renderer: HTTPErrorRenderer) -> HTTPServerResponse {
            renderer.response(for: .init(status: error.status, message: error.message, headerFields: error.headerFields, error: error))
        }
    }

    /// The lowercased comma-separated tokens of a field's values.
    static func tokens(_ values: [String]) -> [String] {
        values.flatMap { $0.split(separator: ",") }.map { $0.trimmingWhitespace().lowercased() }
    }

    /// A key is the base64 of 16 bytes: 22 base64 characters and `==`.
    static func isValidKey(_ key: String) -> Bool {
        let bytes = Array(key.trimmingWhitespace().utf8)
        guard bytes.count == 24, bytes[22] == UInt8(ascii: "="), bytes[23] == UInt8(ascii: "=") else { return false }
        return bytes[..<22].allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "+"), UInt8(ascii: "/"): true
            default: false
            }
        }
    }

    /// `Sec-WebSocket-Accept` for a key: base64(SHA-1(key + GUID)).
    ///
    /// The corresponding OpenSSL calls are `EVP_Digest` with `EVP_sha1()` and `EVP_EncodeBlock`.
    static func acceptValue(forKey key: String) -> String {
        let input = Array((key.trimmingWhitespace() + guid).utf8)
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        let hashed = input.withUnsafeBytes { input in
            EVP_Digest(input.baseAddress, input.count, &digest, &length, EVP_sha1(), nil)
        }
        precondition(hashed == 1 && length == 20, "OpenSSL refused SHA-1")
        var encoded = [UInt8](repeating: 0, count: 29)  // 4 * ceil(20 / 3) + the terminating NUL
        let count = EVP_EncodeBlock(&encoded, digest, 20)
        return String(decoding: encoded[..<Int(count)], as: UTF8.self)
    }

    /// The bytes of the `101 Switching Protocols` response.
    ///
    /// - Parameters:
    ///   - acceptValue: `Sec-WebSocket-Accept`.
    ///   - extensions: `Sec-WebSocket-Extensions`, when an extension was negotiated.
    ///   - extraFields: Fields the route's decision added (`Sec-WebSocket-Protocol`, cookies, …).
    static func switchingProtocols(acceptValue: String, extensions: String?, extraFields: HTTPFields) -> [UInt8] {
        var head = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        head += "Sec-WebSocket-Accept: \(acceptValue)\r\n"
        if let extensions { head += "Sec-WebSocket-Extensions: \(extensions)\r\n" }
        for field in extraFields { head += "\(field.name.rawName): \(field.value)\r\n" }
        head += "\r\n"
        return Array(head.utf8)
    }
}

extension StringProtocol {
    /// The string without leading and trailing spaces and tabs (a field value's optional whitespace).
    func trimmingWhitespace() -> String {
        var trimmed = Substring(self)
        while let first = trimmed.first, first == " " || first == "\t" { trimmed = trimmed.dropFirst() }
        while let last = trimmed.last, last == " " || last == "\t" { trimmed = trimmed.dropLast() }
        return String(trimmed)
    }
}
