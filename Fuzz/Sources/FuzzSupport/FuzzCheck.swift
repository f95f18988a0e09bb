/// Stops the fuzzer with a message when a property does not hold: libFuzzer records the input as a crash.
///
/// Unlike `precondition`, it also stops in release builds, and its message names the property.
@inline(never)
public func fuzzCheck(_ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String,
                      file: StaticString = #fileID, line: UInt = #line) {
    if !condition() { fatalError("fuzz property broken: \(message())", file: file, line: line) }
}

/// A seeded generator (SplitMix64), so a fuzz input always gets the same pseudo-random choices.
public struct SplitMix: RandomNumberGenerator {
    var state: UInt64

    /// A generator seeded with `seed`.
    public init(seed: UInt64) { state = seed }

    /// A generator seeded with the FNV-1a hash of `bytes`.
    public init(hashing bytes: UnsafeRawBufferPointer) {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        state = hash
    }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
