/// The noun for a progress's units in descriptions, in singular and plural.
///
/// Safe from any thread (a value).
public struct ProgressUnitName: Sendable, Hashable {
    /// The noun for one unit, such as "file". Safe from any thread (a value).
    public var singular: String
    /// The noun for zero or several units, such as "files". Safe from any thread (a value).
    public var plural: String

    /// Creates a unit name.
    ///
    /// Safe from any thread.
    /// - Parameters:
    ///   - singular: The noun for one unit.
    ///   - plural: The noun for other counts.
    public init(singular: String, plural: String) {
        self.singular = singular
        self.plural = plural
    }

    /// "item" / "items": the default. Safe from any thread (a value).
    public static let items = ProgressUnitName(singular: "item", plural: "items")
    /// "file" / "files". Safe from any thread (a value).
    public static let files = ProgressUnitName(singular: "file", plural: "files")
    /// "byte" / "bytes". Safe from any thread (a value).
    public static let bytes = ProgressUnitName(singular: "byte", plural: "bytes")

    /// The noun that agrees with `count`.
    func agreeing(with count: Int64) -> String { count == 1 ? singular : plural }
}
