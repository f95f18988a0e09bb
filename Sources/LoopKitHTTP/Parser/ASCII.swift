/// Byte classes of RFC 9110/9112, for the parser and the serializer.
enum ASCII {
    static let cr = UInt8(ascii: "\r")
    static let lf = UInt8(ascii: "\n")
    static let space = UInt8(ascii: " ")
    static let tab = UInt8(ascii: "\t")
    static let colon = UInt8(ascii: ":")

    /// `tchar` of RFC 9110 §5.6.2: letters, digits and ``tokenPunctuation``, looked up in ``classes``.
    @inline(__always)
    static func isTokenCharacter(_ byte: UInt8) -> Bool {
        byteClass(byte) & tokenClass != 0
    }

    /// A byte of RFC 3986's `reg-name` other than `%` (`unreserved` and `sub-delims`), looked up in
    /// ``classes``.
    @inline(__always)
    static func isRegisteredNameCharacter(_ byte: UInt8) -> Bool {
        byteClass(byte) & registeredNameClass != 0
    }

    private static let tokenClass: UInt8 = 1
    private static let targetClass: UInt8 = 2
    private static let registeredNameClass: UInt8 = 4

    /// The classes of a byte: its character in ``classes`` less `@`.
    @inline(__always)
    private static func byteClass(_ byte: UInt8) -> UInt8 {
        classes.utf8Start[Int(byte)] &- UInt8(ascii: "@")
    }

    /// One character for each byte value 0–255: `@` plus the byte's classes, bit 0 `tchar`, bit 1 a visible
    /// character (0x21–0x7E, a request target's), bit 2 ``isRegisteredNameCharacter(_:)``. A literal, so a
    /// lookup is a load from constant memory: no lazy global to initialize (a table behind a `static let`
    /// cost a `swift_once` per field line) and about half the instructions of the two 64-bit masks it
    /// replaced. `ASCIITests` checks every byte against the RFCs' sets.
    @inline(__always)
    private static var classes: StaticString {
        "@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@GBCGCGGFFGGFGGBGGGGGGGGGGBFBFBBBGGGGGGGGGGGGGGGGGGGGGGGGGGBBBCGCGGGGGGGGGGGGGGGGGGGGGGGGGGBCBG@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@"
    }

    /// Whether `value` holds a byte no field value may (RFC 9110 §5.5): a control character other than
    /// tab, or DEL. Eight bytes are tested at a time, each word for any byte below 0x20 or equal to 0x7F
    /// (the bit tricks of *Bit Twiddling Hacks*, exact for "any"), and only a word that has one (a tab, as
    /// a rule) byte by byte.
    static func hasInvalidFieldValueByte(_ value: UnsafeRawBufferPointer) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101, highs: UInt64 = 0x8080_8080_8080_8080
        var index = 0
        while index + 8 <= value.count {
            let word = value.loadUnaligned(fromByteOffset: index, as: UInt64.self)
            let below20 = (word &- ones &* 0x20) & ~word & highs
            let del = word ^ (ones &* 0x7F)
            let isDEL = (del &- ones) & ~del & highs
            if below20 | isDEL != 0 {
                for offset in index..<(index + 8) where isInvalidFieldValueByte(value[offset]) { return true }
            }
            index += 8
        }
        while index < value.count {
            if isInvalidFieldValueByte(value[index]) { return true }
            index += 1
        }
        return false
    }

    @inline(__always)
    private static func isInvalidFieldValueByte(_ byte: UInt8) -> Bool {
        byte < 0x20 && byte != tab || byte == 0x7F
    }

    /// The punctuation a token may hold (RFC 9110 §5.6.2).
    static let tokenPunctuation: StaticString = "!#$%&'*+-.^_`|~"

    @inline(__always)
    static func isDigit(_ byte: UInt8) -> Bool { byte &- UInt8(ascii: "0") < 10 }

    /// `A`–`Z` or `a`–`z`.
    static func isAlpha(_ byte: UInt8) -> Bool { (byte | 0x20) &- UInt8(ascii: "a") < 26 }

    @inline(__always)
    static func hexValue(_ byte: UInt8) -> Int? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): Int(byte &- UInt8(ascii: "0"))
        case UInt8(ascii: "a")...UInt8(ascii: "f"): Int(byte &- UInt8(ascii: "a") &+ 10)
        case UInt8(ascii: "A")...UInt8(ascii: "F"): Int(byte &- UInt8(ascii: "A") &+ 10)
        default: nil
        }
    }

    @inline(__always)
    static func lowercased(_ byte: UInt8) -> UInt8 {
        byte &- UInt8(ascii: "A") < 26 ? byte | 0x20 : byte
    }

    /// Whether `bytes` equal `literal` exactly.
    static func equals(_ bytes: UnsafeRawBufferPointer, _ literal: StaticString) -> Bool {
        guard bytes.count == literal.utf8CodeUnitCount else { return false }
        return literal.withUTF8Buffer { expected in
            for index in 0..<expected.count where bytes[index] != expected[index] { return false }
            return true
        }
    }

    /// Whether `bytes`, lowercased, equal the lowercase `literal` (ASCII letters compared without case,
    /// every other byte exactly). Eight bytes, then four, at a time: a byte loop through the literal's
    /// buffer cost about a hundred instructions a field name.
    static func equalsIgnoringCase(_ bytes: UnsafeRawBufferPointer, _ literal: StaticString) -> Bool {
        let count = literal.utf8CodeUnitCount
        guard bytes.count == count else { return false }
        let expected = UnsafeRawPointer(literal.utf8Start)
        var index = 0
        while index + 8 <= count {
            let word = bytes.loadUnaligned(fromByteOffset: index, as: UInt64.self)
            let lower = expected.loadUnaligned(fromByteOffset: index, as: UInt64.self)
            guard word | letterBits(of: lower) == lower else { return false }
            index += 8
        }
        if index + 4 <= count {
            let word = UInt64(bytes.loadUnaligned(fromByteOffset: index, as: UInt32.self))
            let lower = UInt64(expected.loadUnaligned(fromByteOffset: index, as: UInt32.self))
            guard word | letterBits(of: lower) == lower else { return false }
            index += 4
        }
        while index < count {
            guard lowercased(bytes[index]) == expected.load(fromByteOffset: index, as: UInt8.self) else { return false }
            index += 1
        }
        return true
    }

    /// 0x20 in each byte of `word` that is a lowercase letter, 0 in the others: what `|` adds to an
    /// uppercase letter to lowercase it, and to nothing else. (A byte of 0x80 or above is never a letter:
    /// the sums stay within each byte.)
    @inline(__always)
    private static func letterBits(of word: UInt64) -> UInt64 {
        let ones: UInt64 = 0x0101_0101_0101_0101, highs: UInt64 = 0x8080_8080_8080_8080
        let ascii = word & ~highs
        let atLeastA = ascii &+ (ones &* (0x80 - 0x61))
        let aboveZ = ascii &+ (ones &* (0x80 - 0x7B))
        return (atLeastA & ~aboveZ & ~word & highs) >> 2
    }
}
