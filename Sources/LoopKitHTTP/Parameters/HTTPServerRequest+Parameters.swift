extension HTTPPathParameters {
    /// The value of parameter `name`, percent-decoded (`/files/:name` on `/files/a%20b` gives `a b`).
    ///
    /// - Parameter name: The parameter's name in the route (`id` for `/todos/:id`).
    /// - Returns: The value, or nil when the route has no such parameter.
    ///
    /// Safe from any thread.
    public func value(_ name: String) -> String? {
        self[name].map { PercentDecoding.decode($0, plusIsSpace: false) }
    }

    /// The value of parameter `name`, percent-decoded and converted to `type`; 400 when it does not convert.
    ///
    /// ```swift
    /// router.get("/todos/:id") { request in
    ///     let id = try request.parameters.require("id", as: Int.self)   // "/todos/x": 400
    ///     …
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - name: The parameter's name in the route.
    ///   - type: The type: `Int`, `Bool`, `String`, any ``HTTPParameterValue``.
    /// - Returns: The value.
    /// - Throws: ``HTTPError`` 400 (`parameter id: expected an integer`) when the value does not convert;
    ///   500 when the route has no parameter `name` (a mistake in the route, not the client's).
    ///
    /// Safe from any thread.
    public func require<Value: HTTPParameterValue>(_ name: String, as type: Value.Type = String.self) throws(HTTPError) -> Value {
        guard let text = value(name) else {
            throw HTTPError(.internalServerError, "the route has no parameter \(name)")
        }
        guard let value = Value.converting(parameter: text) else {
            throw HTTPError(.badRequest, "parameter \(name): expected \(Value.parameterExpectation)")
        }
        return value
    }
}

extension HTTPServerRequest {
    /// The value of query parameter `name` (the first one), percent-decoded with `+` as a space, as a
    /// browser's form sends it (`?q=caf%C3%A9+au+lait` gives `café au lait`); ``query(_:)`` is the raw form.
    ///
    /// - Parameter name: The parameter's name (matched after decoding).
    /// - Returns: Its value (empty for `?flag` and `?flag=`), or nil when the query has no such parameter.
    ///
    /// Safe from any thread.
    public func queryValue(_ name: String) -> String? {
        var found: String?
        forEachQueryPair { pairName, value in
            guard PercentDecoding.decode(pairName, plusIsSpace: true) == name else { return true }
            found = PercentDecoding.decode(value, plusIsSpace: true)
            return false
        }
        return found
    }

    /// Every value of query parameter `name`, in order, percent-decoded (`?tag=a&tag=b` gives `["a", "b"]`).
    ///
    /// - Parameter name: The parameter's name.
    /// - Returns: Its values; empty when there are none.
    ///
    /// Safe from any thread.
    public func queryValues(_ name: String) -> [String] {
        var values: [String] = []
        forEachQueryPair { pairName, value in
            if PercentDecoding.decode(pairName, plusIsSpace: true) == name {
                values.append(PercentDecoding.decode(value, plusIsSpace: true))
            }
            return true
        }
        return values
    }

    /// Query parameter `name`, percent-decoded and converted to `type`; nil when absent, 400 when present
    /// and not convertible.
    ///
    /// ```swift
    /// let limit = try request.query("limit", as: Int.self) ?? 20     // "?limit=x": 400
    /// ```
    ///
    /// - Parameters:
    ///   - name: The parameter's name.
    ///   - type: The type: `Int`, `Bool`, `String`, any ``HTTPParameterValue``.
    /// - Returns: The value, or nil when the query has no such parameter.
    /// - Throws: ``HTTPError`` 400 (`query parameter limit: expected an integer`).
    ///
    /// Safe from any thread.
    public func query<Value: HTTPParameterValue>(_ name: String, as type: Value.Type) throws(HTTPError) -> Value? {
        guard let text = queryValue(name) else { return nil }
        guard let value = Value.converting(parameter: text) else {
            throw HTTPError(.badRequest, "query parameter \(name): expected \(Value.parameterExpectation)")
        }
        return value
    }

    /// Query parameter `name`, percent-decoded and converted to `type`; 400 when absent or not convertible.
    ///
    /// ```swift
    /// let term = try request.require(query: "q")                    // "/search": 400
    /// ```
    ///
    /// - Parameters:
    ///   - name: The parameter's name.
    ///   - type: The type (`String` by default).
    /// - Returns: The value.
    /// - Throws: ``HTTPError`` 400: `query parameter q: missing`, `query parameter page: expected an integer`.
    ///
    /// Safe from any thread.
    public func require<Value: HTTPParameterValue>(query name: String, as type: Value.Type = String.self) throws(HTTPError) -> Value {
        guard let value = try query(name, as: type) else {
            throw HTTPError(.badRequest, "query parameter \(name): missing")
        }
        return value
    }

    /// Calls `body` with each `name=value` pair of the query, raw, until it returns false.
    private func forEachQueryPair(_ body: (Substring, Substring) -> Bool) {
        guard let target = head.path, let mark = target.utf8.firstIndex(of: UInt8(ascii: "?")) else { return }
        for pair in target[target.index(after: mark)...].split(separator: "&") {
            let keepGoing: Bool
            if let equals = pair.firstIndex(of: "=") {
                keepGoing = body(pair[..<equals], pair[pair.index(after: equals)...])
            } else {
                keepGoing = body(pair, pair[pair.endIndex...])
            }
            if !keepGoing { return }
        }
    }
}
