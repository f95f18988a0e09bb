/// A type a path or query parameter converts to: `Int`, `Double`, `Bool`, `String`, any
/// `LosslessStringConvertible`, or a `RawRepresentable` enum through ``HTTPParameterValue/converting(parameter:)``.
///
/// ```swift
/// let id = try request.parameters.require("id", as: Int.self)        // 400 "parameter id: expected an integer"
/// let page = try request.query("page", as: Int.self) ?? 1             // absent: nil; "x": 400
/// ```
///
/// Conform a type of your own with ``converting(parameter:)`` and, for the 400's message,
/// ``parameterExpectation``.
public protocol HTTPParameterValue {
    /// The value for `parameter` (percent-decoded), or nil when it does not convert.
    ///
    /// A static function rather than an initialiser: an `init?(_:)`-shaped requirement would make
    /// `Int.init` ambiguous in every module that imports LoopKitHTTP (`strings.compactMap(Int.init)`).
    static func converting(parameter: String) -> Self?
    /// What the value must look like, for a 400's message: `an integer`, `true or false`.
    static var parameterExpectation: String { get }
}

extension HTTPParameterValue where Self: LosslessStringConvertible {
    public static func converting(parameter: String) -> Self? { Self(parameter) }
    public static var parameterExpectation: String { "a value of type \(Self.self)" }
}

extension String: HTTPParameterValue {
    public static var parameterExpectation: String { "a string" }
}
extension Substring: HTTPParameterValue {
    public static var parameterExpectation: String { "a string" }
}
extension Bool: HTTPParameterValue {
    public static var parameterExpectation: String { "true or false" }
}
extension Int: HTTPParameterValue {
    public static var parameterExpectation: String { "an integer" }
}
extension Int64: HTTPParameterValue {
    public static var parameterExpectation: String { "an integer" }
}
extension Int32: HTTPParameterValue {
    public static var parameterExpectation: String { "an integer" }
}
extension UInt: HTTPParameterValue {
    public static var parameterExpectation: String { "a non-negative integer" }
}
extension UInt64: HTTPParameterValue {
    public static var parameterExpectation: String { "a non-negative integer" }
}
extension UInt32: HTTPParameterValue {
    public static var parameterExpectation: String { "a non-negative integer" }
}
extension Double: HTTPParameterValue {
    public static var parameterExpectation: String { "a number" }
}
extension Float: HTTPParameterValue {
    public static var parameterExpectation: String { "a number" }
}

extension HTTPParameterValue where Self: RawRepresentable, RawValue: HTTPParameterValue {
    /// The case whose raw value `parameter` converts to.
    public static func converting(parameter: String) -> Self? {
        RawValue.converting(parameter: parameter).flatMap(Self.init(rawValue:))
    }
    public static var parameterExpectation: String { "a value of type \(Self.self)" }
}

extension HTTPParameterValue where Self: RawRepresentable & CaseIterable, RawValue: HTTPParameterValue {
    /// `one of asc, desc`.
    public static var parameterExpectation: String {
        "one of " + allCases.map { "\($0.rawValue)" }.joined(separator: ", ")
    }
}
