/// Validates UTF-8 incrementally, in pieces split anywhere (inside a code point too): text messages
/// are checked fragment by fragment as they arrive, so bad text fails at the first bad fragment.
///
/// Rejects what the Unicode standard's table 3-7 rejects: overlong forms, surrogates (U+D800–U+DFFF),
/// code points above U+10FFFF, stray continuation bytes and the bytes C0, C1, F5–FF.
///
/// A value type: safe from any thread.
struct UTF8Validator: Sendable {
    /// Continuation bytes the current code point still needs.
    private var needed = 0
    /// The range the next continuation byte must be in (narrower after E0, ED, F0 and F4).
    private var lower: UInt8 = 0x80
    private var upper: UInt8 = 0xBF

    /// Whether the bytes so far end on a code point boundary (a message may end here).
    var isComplete: Bool { needed == 0 }

    /// Checks the next piece; false as soon as the bytes so far cannot be UTF-8.
    ///
    /// - Parameter bytes: The next bytes of the text.
    /// - Returns: Whether the text so far is valid (or a valid prefix).
    mutating func validate(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var index = 0
        let count = bytes.count
        while index < count {
            if needed == 0 {
                index += Self.asciiPrefixLength(UnsafeRawBufferPointer(rebasing: bytes[index...]))
                guard index < count else { break }
            }
            let byte = bytes[index]
            index += 1
            if needed == 0 {
                if byte < 0x80 { continue }
                switch byte {
                case 0xC2...0xDF: needed = 1
                case 0xE0: needed = 2; lower = 0xA0
                case 0xE1...0xEC, 0xEE, 0xEF: needed = 2
                case 0xED: needed = 2; upper = 0x9F
                case 0xF0: needed = 3; lower = 0x90
                case 0xF1...0xF3: needed = 3
                case 0xF4: needed = 3; upper = 0x8F
                default: return false
                }
            } else {
                guard byte >= lower && byte <= upper else { return false }
                lower = 0x80
                upper = 0xBF
                needed -= 1
            }
        }
        return true
    }

    /// Whether every byte is ASCII (below 0x80): text that is valid UTF-8 whatever came before it on a
    /// code point boundary.
    static func isASCII(_ bytes: UnsafeRawBufferPointer) -> Bool {
        asciiPrefixLength(bytes) == bytes.count
    }

    /// How many bytes at the start are ASCII, looked at 32 bytes at a time, then 8, then 1.
    static func asciiPrefixLength(_ bytes: UnsafeRawBufferPointer) -> Int {
        let highBits: UInt64 = 0x8080_8080_8080_8080
        let count = bytes.count
        var index = 0
        while index + 32 <= count {
            let any = bytes.loadUnaligned(fromByteOffset: index, as: UInt64.self)
                | bytes.loadUnaligned(fromByteOffset: index + 8, as: UInt64.self)
                | bytes.loadUnaligned(fromByteOffset: index + 16, as: UInt64.self)
                | bytes.loadUnaligned(fromByteOffset: index + 24, as: UInt64.self)
            guard any & highBits == 0 else { break }
            index += 32
        }
        while index + 8 <= count, bytes.loadUnaligned(fromByteOffset: index, as: UInt64.self) & highBits == 0 {
            index += 8
        }
        while index < count, bytes[index] < 0x80 { index += 1 }
        return index
    }

    /// Checks the next piece (an array).
    mutating func validate(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { validate($0) }
    }

    /// Starts over, for the next message.
    mutating func reset() {
        self = UTF8Validator()
    }
}
