import Testing
@testable import LoopKitHTTP

@Suite("ASCII byte classes")
struct ASCIITests {
    /// The masks say exactly RFC 9110 §5.6.2's `tchar`: letters, digits and the token punctuation, for
    /// every one of the 256 byte values.
    @Test func tokenCharactersAreExactlyRFC9110sTchar() {
        let punctuation = ASCII.tokenPunctuation.withUTF8Buffer { Set($0) }
        for value in 0...255 {
            let byte = UInt8(value)
            let isTchar = (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || punctuation.contains(byte)
            #expect(ASCII.isTokenCharacter(byte) == isTchar, "byte \(value)")
        }
    }

    /// The masks say exactly RFC 3986's `reg-name` bytes other than `%`: `unreserved` and `sub-delims`.
    @Test func registeredNameCharactersAreExactlyRFC3986s() {
        let others = Set("-._~!$&'()*+,;=".utf8)
        for value in 0...255 {
            let byte = UInt8(value)
            let isRegName = (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || others.contains(byte)
            #expect(ASCII.isRegisteredNameCharacter(byte) == isRegName, "byte \(value)")
        }
    }

    /// Every byte value, at every position of values from 1 to 20 bytes long (the word-at-a-time test and
    /// its byte-by-byte tail), is found invalid exactly when RFC 9110 §5.5 forbids it: controls but tab,
    /// and DEL; `obs-text` (0x80 and up) is allowed.
    @Test func aFieldValueIsInvalidExactlyWhenItHoldsAControlOtherThanTabOrDEL() {
        for length in 1...20 {
            for position in 0..<length {
                for value in 0...255 {
                    var bytes = [UInt8](repeating: UInt8(ascii: "a"), count: length)
                    bytes[position] = UInt8(value)
                    let isInvalid = (value < 0x20 && value != 0x09) || value == 0x7F
                    let found = bytes.withUnsafeBytes { ASCII.hasInvalidFieldValueByte($0) }
                    if found != isInvalid { Issue.record("byte \(value) at \(position) of \(length)") }
                }
            }
        }
    }
}
