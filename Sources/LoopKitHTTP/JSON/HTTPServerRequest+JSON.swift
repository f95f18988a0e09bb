#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import LoopKitNet

extension HTTPServerRequest {
    /// The collected body, decoded from JSON; a body that does not decode answers 400 by itself.
    ///
    /// ```swift
    /// router.post("/todos") { request in
    ///     let new = try request.decode(as: NewTodo.self)   // 400 "invalid JSON body: missing field title"
    ///     return try .json(store.add(new), status: .created)
    /// }
    /// ```
    ///
    /// The body was collected up to ``HTTPServer/Configuration/maxBodySize`` before the handler ran (a
    /// larger one got 413 without running it). The `Content-Type` is not checked (`curl -d` sends
    /// `application/x-www-form-urlencoded`). A streaming route decodes with
    /// ``HTTPRequestBody/decode(as:upTo:decoder:)``.
    ///
    /// - Parameters:
    ///   - type: The type to decode.
    ///   - decoder: The decoder (nil: a plain `JSONDecoder`, shared).
    /// - Returns: The decoded value.
    /// - Throws: ``HTTPError`` 400 whose message says what is wrong (`invalid JSON body: missing field
    ///   title`, `…: items[2].done: expected Bool`, `…: the body is empty`): thrown on, it is the answer.
    ///
    /// Safe from any thread (the request is a value).
    public func decode<Value: Decodable>(as type: Value.Type = Value.self,
                                         decoder: JSONDecoder? = nil) throws(HTTPError) -> Value {
        try JSONBody.decode(type, from: body, decoder: decoder)
    }
}

extension HTTPRequestBody {
    /// Collects the body up to `limit` bytes and decodes it from JSON, answering 413 and 400 by itself.
    ///
    /// ```swift
    /// router.on(.post, "/imports", bodyLimit: nil) { request, body in
    ///     let batch = try await body.decode(as: [NewTodo].self, upTo: 8 << 20)   // 413 past 8 MiB
    ///     return try .json(["imported": batch.count], status: .created)
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - type: The type to decode.
    ///   - limit: The most bytes to accept (the route's own limit, when it has one, applies too).
    ///   - decoder: The decoder (nil: a plain `JSONDecoder`, shared).
    /// - Returns: The decoded value.
    /// - Throws: ``HTTPError``: 413 past `limit` (or the route's limit), 400 for a body that does not
    ///   decode (with a message saying why), a malformed body or one cut short by the client leaving.
    ///
    /// Call on the loop's thread (from the handler's task).
    public func decode<Value: Decodable>(as type: Value.Type = Value.self, upTo limit: Int,
                                         decoder: JSONDecoder? = nil) async throws(HTTPError) -> Value {
        let bytes: Bytes
        do {
            bytes = try await collect(upTo: limit)
        } catch {
            switch error {
            case .tooLarge(let limit):
                throw HTTPError(.contentTooLarge, "the request body is larger than \(limit) bytes")
            case .connectionClosed, .malformed:
                throw HTTPError(.badRequest, "\(error)")
            }
        }
        return try JSONBody.decode(type, from: bytes, decoder: decoder)
    }
}

/// Decoding a JSON body, and the 400 message for one that does not decode.
enum JSONBody {
    static func decode<Value: Decodable>(_ type: Value.Type, from bytes: Bytes,
                                         decoder: JSONDecoder?) throws(HTTPError) -> Value {
        guard !bytes.isEmpty else { throw HTTPError(.badRequest, "invalid JSON body: the body is empty") }
        do {
            return try (decoder ?? JSONCoders.decoder).decode(type, from: bytes.withUnsafeBytes { Data($0) })
        } catch let error as DecodingError {
            throw HTTPError(.badRequest, "invalid JSON body: " + problem(error))
        } catch {
            throw HTTPError(.badRequest, "invalid JSON body: \(error)")
        }
    }

    /// What is wrong, in a sentence a client's developer can act on (Foundation's descriptions name
    /// Swift's types and coding keys).
    static func problem(_ error: DecodingError) -> String {
        switch error {
        case .keyNotFound(let key, let context):
            return "missing field " + path(context.codingPath + [key])
        case .valueNotFound(let type, let context):
            return at(context.codingPath) + "expected \(expectation(type)), found null"
        case .typeMismatch(let type, let context):
            return at(context.codingPath) + "expected \(expectation(type))"
        case .dataCorrupted(let context):
            if context.codingPath.isEmpty {
                return "not valid JSON" + (context.underlyingError.map { " (\($0))" } ?? "")
            }
            return at(context.codingPath) + context.debugDescription
        @unknown default:
            return "\(error)"
        }
    }

    /// `items[2].done: `, or nothing at the top level.
    private static func at(_ codingPath: [any CodingKey]) -> String {
        codingPath.isEmpty ? "" : path(codingPath) + ": "
    }

    private static func path(_ codingPath: [any CodingKey]) -> String {
        var text = ""
        for key in codingPath {
            if let index = key.intValue, key.stringValue.hasPrefix("Index ") || key.stringValue == "\(index)" {
                text += "[\(index)]"
            } else {
                if !text.isEmpty { text += "." }
                text += key.stringValue
            }
        }
        return text
    }

    /// `Bool` → `true or false`, integers → `an integer`, and so on.
    private static func expectation(_ type: Any.Type) -> String {
        if type == Bool.self { return "true or false" }
        if type is any FixedWidthInteger.Type { return "an integer" }
        if type is any BinaryFloatingPoint.Type { return "a number" }
        if type == String.self { return "a string" }
        let name = String(describing: type)
        if name.hasPrefix("Array<") { return "an array" }
        if name.hasPrefix("Dictionary<") { return "an object" }
        return "\(name)"
    }
}
