#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import HTTPTypes

// JSON uses Foundation's `JSONEncoder` and `JSONDecoder` (swift-foundation's FoundationEssentials on
// Linux: no ICU). It adds no dependency: swift-http-types, which LoopKitHTTP re-exports, links
// FoundationEssentials already (its default `FoundationURL` trait).

extension HTTPServerResponse {
    /// An `application/json; charset=utf-8` response: `value` encoded by `encoder`.
    ///
    /// ```swift
    /// router.get("/todos/:id") { request in
    ///     let id = try request.parameters.require("id", as: Int.self)   // 400 when not an integer
    ///     guard let todo = todos[id] else { throw HTTPError(.notFound) }
    ///     return try .json(todo)
    /// }
    /// ```
    ///
    /// With fields, for a `201 Created` and its `Location`:
    ///
    /// ```swift
    /// return try .json(todo, status: .created, headerFields: [.location: "/todos/\(todo.id)"])
    /// ```
    ///
    /// - Parameters:
    ///   - value: What to send.
    ///   - status: The status (200 by default).
    ///   - headerFields: More fields; a `Content-Type` among them replaces the JSON one.
    ///   - encoder: The encoder (nil: a plain `JSONEncoder`, shared).
    /// - Returns: The response.
    /// - Throws: The encoder's `EncodingError` (a value JSON cannot hold, such as `Double.nan`); a handler
    ///   that lets it propagate gets 500.
    ///
    /// Safe from any thread.
    public static func json(_ value: some Encodable, status: HTTPResponse.Status = .ok, headerFields: HTTPFields = [:],
                            encoder: JSONEncoder? = nil) throws -> HTTPServerResponse {
        let data = try (encoder ?? JSONCoders.encoder).encode(value)
        return HTTPServerResponse(status: status, headerFields: fields(JSONCoders.contentTypeFields, adding: headerFields),
                                  body: .bytes(data))
    }
}

/// The coders used when a caller gives none (both are thread-safe: their options are read under a lock).
enum JSONCoders {
    static let contentType = "application/json; charset=utf-8"
    /// `Content-Type` for JSON, built once and shared (see ``HTTPServerResponse/plainTextFields``).
    static let contentTypeFields: HTTPFields = [.contentType: contentType]
    static let encoder = JSONEncoder()
    static let decoder = JSONDecoder()
}
