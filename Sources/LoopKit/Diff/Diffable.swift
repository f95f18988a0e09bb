/// A value with a stable identity and comparable content, so that a diff can tell moves from updates.
///
/// Two values with equal ``diffID`` are the *same item*: if they sit at different positions the item
/// moved; if they compare unequal with `==` its content was updated. Identity is compared with the
/// identifier's own `==` (through a `Dictionary` keyed by the identifier), never by hash value alone, so
/// hash collisions can't pair the wrong items.
///
/// Any `Hashable` type can use itself as its identity: declare the conformance and the default
/// ``diffID`` returns `self` (such values are never reported as updated, only moved). LoopKit
/// declares this conformance for the standard library's integer types, `Bool`, `String`, `Substring`,
/// `Character`, `Unicode.Scalar` and `AnyHashable`.
///
/// ```swift
/// struct Contact: Diffable {
///     var id: Int          // identity
///     var name: String     // content
///     var diffID: Int { id }
/// }
/// extension Tag: Diffable {}   // Tag: Hashable, uses itself as identity
/// ```
///
/// Conformers must keep ``diffID`` and `==` pure: a diff reads them from any thread.
public protocol Diffable: Equatable {
    /// The type of the identity.
    associatedtype DiffID: Hashable

    /// The identity of this value: equal for the same item across the old and new data.
    ///
    /// Safe from any thread: a pure function of the value.
    var diffID: DiffID { get }
}

extension Diffable where Self: Hashable {
    /// The value itself: a `Hashable` value is its own identity.
    ///
    /// Safe from any thread: a pure function of the value.
    @inlinable
    public var diffID: Self { self }
}

extension Int: Diffable {}
extension Int8: Diffable {}
extension Int16: Diffable {}
extension Int32: Diffable {}
extension Int64: Diffable {}
extension UInt: Diffable {}
extension UInt8: Diffable {}
extension UInt16: Diffable {}
extension UInt32: Diffable {}
extension UInt64: Diffable {}
extension Bool: Diffable {}
extension String: Diffable {}
extension Substring: Diffable {}
extension Character: Diffable {}
extension Unicode.Scalar: Diffable {}
extension AnyHashable: Diffable {}
