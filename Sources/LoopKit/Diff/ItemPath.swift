/// The position of an item in sectioned data: a section index and an item index within it.
///
/// The sectioned counterpart of an offset, like UIKit's `IndexPath` for rows and items, without
/// Foundation. Ordered by section, then item.
///
/// A value: safe to use from any thread.
public struct ItemPath: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The index of the section.
    public var section: Int
    /// The index of the item within its section.
    public var item: Int

    /// Creates the path of the item at `item` in the section at `section`.
    @inlinable
    public init(section: Int, item: Int) {
        self.section = section
        self.item = item
    }

    /// Orders paths by section, then by item.
    ///
    /// Safe from any thread: a pure function of its inputs.
    @inlinable
    public static func < (lhs: ItemPath, rhs: ItemPath) -> Bool {
        (lhs.section, lhs.item) < (rhs.section, rhs.item)
    }

    /// The path as `[section, item]`.
    public var description: String { "[\(section), \(item)]" }
}
