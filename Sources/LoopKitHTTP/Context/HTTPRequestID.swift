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
    /// The base-32 digits, read from a literal's bytes (no lazy global, no array checks).
    static var digitBytes: UnsafeRawPointer {
        UnsafeRawPointer(("0123456789abcdefghijklmnopqrstuv" as StaticString).utf8Start)
    }

    /// The prefix, the context's number and `-`: one immutable object a made id refers to.
    let prefix: Prefix
    private var counter: UInt64 = 0

    /// The bytes every id of a generator starts with, in memory of its own (read without an array's
    /// checks). Immutable.
    final class Prefix: Sendable {
        /// The bytes: `count` of them. Never written after init.
        nonisolated(unsafe) let start: UnsafeMutableRawPointer  // written only by init, then read-only on any thread
        let count: Int

        init(_ bytes: [UInt8]) {
            count = bytes.count
            start = UnsafeMutableRawPointer.allocate(byteCount: Swift.max(count, 1), alignment: 1)
            bytes.withUnsafeBytes { if let base = $0.baseAddress { start.copyMemory(from: base, byteCount: count) } }
        }

        deinit {
            start.deallocate()
        }

        /// The number of base-32 digits of `number`.
        static func digitCount(of number: UInt64) -> Int {
            number == 0 ? 1 : (UInt64.bitWidth - number.leadingZeroBitCount + 4) / 5
        }

        /// Writes the base-32 digits of `number`, ``digitCount(of:)`` of them, from `position`.
        static func writeDigits(of number: UInt64, to position: UnsafeMutableRawPointer) {
            var value = number
            var index = digitCount(of: number)
            repeat {
                index -= 1
                position.storeBytes(of: HTTPRequestIDGenerator.digitBytes.load(fromByteOffset: Int(value & 31), as: UInt8.self),
                                    toByteOffset: index, as: UInt8.self)
                value >>= 5
            } while value != 0
        }

        /// The id numbered `number`, as a string.
        func id(_ number: UInt64) -> String {
            let length = count + Self.digitCount(of: number)
            return String(unsafeUninitializedCapacity: length) { buffer in
                let base = UnsafeMutableRawPointer(buffer.baseAddress!)
                base.copyMemory(from: start, byteCount: count)
                Self.writeDigits(of: number, to: base + count)
                return length
            }
        }
    }

    init() {
        let number = Self.contexts.wrappingAdd(1, ordering: .relaxed).newValue
        var prefix = Self.processPrefix
        Self.appendBase32(number, to: &prefix)
        prefix.append(UInt8(ascii: "-"))
        self.prefix = Prefix(prefix)
    }

    /// Ids `PREFIX1`, `PREFIX2`, … with no process-wide part: the same in every run, for the in-memory
    /// test host (``HTTPConnectionHost``), whose traces must not depend on how many loops the process made.
    init(fixedPrefix: String) {
        prefix = Prefix(Array(fixedPrefix.utf8))
    }

    /// The number of this loop's next id: the id itself is written only where it is read
    /// (``Prefix/write(_:into:)``, ``Prefix/id(_:)``). Loop thread.
    mutating func nextNumber() -> UInt64 {
        counter &+= 1
        return counter
    }

    /// The next id of this loop, as a string. Loop thread.
    mutating func next() -> String {
        prefix.id(nextNumber())
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
/// per loop context) and the head of the request whose id it is (a made id is written from its number,
/// never made into a string). A struct of two references: copying its optional is specialised code rather
/// than the runtime's witnesses.
struct HTTPEchoedRequestID {
    let field: Field
    /// The head that holds the id.
    let head: HTTPParsedHead

    /// The id of the request whose head is `head`.
    init(field: Field, head: HTTPParsedHead) {
        self.field = field
        self.head = head
    }

    /// The id `value`, of a request refused before its head was parsed (rare: a head of its own).
    init(field: Field, value: String) {
        self.field = field
        head = HTTPParsedHead(built: HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/"))
        head.identify(id: value, startTime: .now)
    }

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
    /// The id, as a string.
    var value: String { head.id }
}
