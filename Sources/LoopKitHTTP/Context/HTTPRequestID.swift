import HTTPTypes
import Synchronization

/// Request ids: taken from the client when valid, else made on the connection's loop.
///
/// A made id is the process's random prefix, the loop context's number and the loop's request counter,
/// in base 32: `k3f9q1-2f`. Unique within the process (each loop context has its own number and
/// counter), fifteen bytes or fewer for the first billion requests of a loop (a small string: no
/// allocation), and made without a lock or an atomic on the request path.
struct HTTPRequestIDGenerator {
    /// The longest id taken from a client; a longer one is replaced.
    static let maxLength = 128

    /// Five random base-32 digits, drawn once per process.
    private static let processPrefix: [UInt8] = {
        var random = SystemRandomNumberGenerator()
        let value = random.next() as UInt64
        return (0..<5).map { digits[Int((value >> ($0 * 5)) & 31)] }
    }()
    /// Numbers the loop contexts of the process (one per server loop, one per test host).
    private static let contexts = Atomic<UInt64>(0)
    private static let digits = Array("0123456789abcdefghijklmnopqrstuv".utf8)

    /// The prefix, the context's number and `-`.
    private let prefix: [UInt8]
    private var counter: UInt64 = 0

    init() {
        let number = Self.contexts.wrappingAdd(1, ordering: .relaxed).newValue
        var prefix = Self.processPrefix
        Self.appendBase32(number, to: &prefix)
        prefix.append(UInt8(ascii: "-"))
        self.prefix = prefix
    }

    /// Ids `PREFIX1`, `PREFIX2`, … with no process-wide part: the same in every run, for the in-memory
    /// test host (``HTTPConnectionHost``), whose traces must not depend on how many loops the process made.
    init(fixedPrefix: String) {
        prefix = Array(fixedPrefix.utf8)
    }

    /// The next id of this loop. Loop thread.
    mutating func next() -> String {
        counter &+= 1
        var digits: (UInt64, Int) = (counter, 0)
        var n = counter
        repeat {
            digits.1 += 1
            n >>= 5
        } while n != 0
        let length = prefix.count + digits.1
        return String(unsafeUninitializedCapacity: length) { buffer in
            _ = buffer.initialize(fromContentsOf: prefix)
            var value = digits.0
            var index = length
            repeat {
                index -= 1
                buffer[index] = Self.digits[Int(value & 31)]
                value >>= 5
            } while value != 0
            return length
        }
    }

    private static func appendBase32(_ value: UInt64, to bytes: inout [UInt8]) {
        var reversed: [UInt8] = []
        var value = value
        repeat {
            reversed.append(digits[Int(value & 31)])
            value >>= 5
        } while value != 0
        bytes += reversed.reversed()
    }

    /// Whether a client's id may be used as it is: 1 to ``maxLength`` bytes of visible ASCII
    /// (`!` to `~`), so it is safe in a log line and in a response field.
    static func isValid(_ id: String) -> Bool {
        var count = 0
        for byte in id.utf8 {
            guard byte >= 0x21 && byte <= 0x7E else { return false }
            count += 1
            if count > maxLength { return false }
        }
        return count > 0
    }
}

/// The request id a response is to carry, unless its handler set the field itself: the field (made once
/// per loop context) and the id. A struct, not a labelled tuple: copying its optional is then specialised
/// code rather than the runtime's tuple witnesses; and the field is one reference, so a copy retains two
/// objects, not the field name's two strings and the id.
struct HTTPEchoedRequestID {
    let field: Field
    let value: String

    /// The field's name, with its canonical length, so that a codec tells most other names apart
    /// without a comparison. Immutable.
    final class Field: Sendable {
        let name: HTTPField.Name
        let nameLength: Int

        init(_ name: HTTPField.Name) {
            self.name = name
            nameLength = name.canonicalName.utf8.count
        }
    }

    var name: HTTPField.Name { field.name }
    var nameLength: Int { field.nameLength }
}
