/// The noun for a progress's units in descriptions, in singular and plural.
///
/// Safe from any thread (a value).
public struct ProgressUnitName: Sendable, Hashable {
    /// The noun for one unit, such as "file".
    public var singular: String
    /// The noun for zero or several units, such as "files".
    public var plural: String

    /// Creates a unit name.
    ///
    /// - Parameters:
    ///   - singular: The noun for one unit.
    ///   - plural: The noun for other counts.
    public init(singular: String, plural: String) {
        self.singular = singular
        self.plural = plural
    }

    /// "item" / "items": the default.
    public static let items = ProgressUnitName(singular: "item", plural: "items")
    /// "file" / "files".
    public static let files = ProgressUnitName(singular: "file", plural: "files")
    /// "byte" / "bytes".
    public static let bytes = ProgressUnitName(singular: "byte", plural: "bytes")

    /// The noun that agrees with `count`.
    func agreeing(with count: Int64) -> String { count == 1 ? singular : plural }
}
