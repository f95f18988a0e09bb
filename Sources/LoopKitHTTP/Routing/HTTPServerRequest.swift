import HTTPTypes
import LoopKit

/// A request as a handler sees it: the head, the collected body, the path parameters and the loop.
public struct HTTPServerRequest: Sendable {
    /// The request head: method, path, authority and fields.
    public var head: HTTPRequest
    /// The version the client spoke.
    public var version: HTTPVersion
    /// The body, collected up to the server's ``HTTPServer/Configuration/maxBodySize``.
    public var body: [UInt8]
    /// Values of the route's `:name` segments.
    public var parameters: HTTPPathParameters
    /// The loop the connection lives on: the handler runs on its thread.
    public let loop: EventLoop

    /// The path without the query: the part of the request target before `?`.
    public var path: Substring {
        let target = head.path ?? "/"
        return target.firstIndex(of: "?").map { target[..<$0] } ?? target[...]
    }

    /// The value of query parameter `name` (the first one), not percent-decoded.
    ///
    /// - Parameter name: The parameter's name.
    /// - Returns: Its value, or nil when the query has no such parameter.
    public func query(_ name: String) -> Substring? {
        guard let target = head.path, let mark = target.firstIndex(of: "?") else { return nil }
        for pair in target[target.index(after: mark)...].split(separator: "&") {
            if let equals = pair.firstIndex(of: "=") {
                if pair[..<equals] == name { return pair[pair.index(after: equals)...] }
            } else if pair == name {
                return ""
            }
        }
        return nil
    }
}

/// The values of a route's `:name` path segments.
public struct HTTPPathParameters: Sendable, Hashable {
    var pairs: [(name: String, value: Substring)] = []

    /// The value of parameter `name`, or nil.
    public subscript(name: String) -> Substring? {
        pairs.first { $0.name == name }?.value
    }

    /// Whether there are none.
    public var isEmpty: Bool { pairs.isEmpty }

    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.pairs.elementsEqual(rhs.pairs) { $0.name == $1.name && $0.value == $1.value }
    }

    public func hash(into hasher: inout Hasher) {
        for pair in pairs {
            hasher.combine(pair.name)
            hasher.combine(pair.value)
        }
    }
}
