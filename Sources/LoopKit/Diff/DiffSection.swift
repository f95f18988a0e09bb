/// A section with an identity (its model) and its items: the unit of sectioned data.
///
/// The model's ``Diffable/diffID`` identifies the section across old and new data; a changed model with
/// the same identity is a section update (a header that changed, say).
///
/// A value: safe to use from any thread (`Sendable` when its type arguments are).
public struct DiffSection<Model, Item> {
    /// The section's identity and content (a title, a header model).
    public var model: Model
    /// The items of the section, in display order.
    public var items: [Item]

    /// Creates a section with `model` and `items`.
    @inlinable
    public init(_ model: Model, items: [Item]) {
        self.model = model
        self.items = items
    }
}

extension DiffSection: Equatable where Model: Equatable, Item: Equatable {}
extension DiffSection: Hashable where Model: Hashable, Item: Hashable {}
extension DiffSection: Sendable where Model: Sendable, Item: Sendable {}
