#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import HTTPTypes
import LoopKitNet

extension HTTPTestClient {
    /// Sends `value` encoded as JSON (`Content-Type: application/json`) and reads the response.
    ///
    /// ```swift
    /// let created = try client.execute(.post, "/todos", json: NewTodo(title: "milk"))
    /// #expect(try created.decode(as: Todo.self).title == "milk")
    /// ```
    ///
    /// - Parameters:
    ///   - method: The method.
    ///   - path: The request target, with its query.
    ///   - headerFields: More fields.
    ///   - value: The body, encoded by a plain `JSONEncoder`.
    /// - Returns: The response.
    /// - Throws: The encoder's error; what ``nextResponse(isHeadRequest:)`` throws.
    ///
    /// Call on the client's thread.
    public func execute(_ method: HTTPRequest.Method, _ path: String, headerFields: HTTPFields = [:],
                        json value: some Encodable) throws -> HTTPTestResponse {
        var fields = headerFields
        if fields[.contentType] == nil { fields[.contentType] = "application/json" }
        return try execute(method, path, headerFields: fields, body: Bytes(JSONEncoder().encode(value)))
    }

    /// Sends `value` encoded as JSON and reads the response, as ``execute(_:_:headerFields:json:)``,
    /// suspending until it has arrived: for `async` tests, across any `await`.
    ///
    /// ```swift
    /// let created = try await client.execute(.post, "/todos", json: NewTodo(title: "milk"))
    /// ```
    nonisolated(nonsending) public func execute(_ method: HTTPRequest.Method, _ path: String, headerFields: HTTPFields = [:],
                                                json value: some Encodable) async throws -> HTTPTestResponse {
        var fields = headerFields
        if fields[.contentType] == nil { fields[.contentType] = "application/json" }
        let body = try Bytes(JSONEncoder().encode(value))  // encoded here: the value need not be Sendable
        return try await execute(method, path, headerFields: fields, body: body)
    }
}

extension HTTPTestResponse {
    /// The body decoded from JSON.
    ///
    /// - Parameters:
    ///   - type: The type to decode.
    ///   - decoder: The decoder (a plain `JSONDecoder` by default).
    /// - Returns: The value.
    /// - Throws: The decoder's `DecodingError`.
    ///
    /// Safe from any thread.
    public func decode<Value: Decodable>(as type: Value.Type = Value.self,
                                         decoder: JSONDecoder = JSONDecoder()) throws -> Value {
        try decoder.decode(type, from: Data(body))
    }
}
