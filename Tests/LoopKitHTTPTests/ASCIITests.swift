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

    /// Against a byte-by-byte reference, for names of every length up to 20 with each position holding
    /// each byte value in turn: letters match in either case, every other byte only as itself.
    @Test func caseInsensitiveEqualityMatchesLettersInEitherCaseAndNothingElse() {
        let literal: StaticString = "x-request-id-abc123z"  // 20 bytes: a word, a half word and a tail
        let expected = literal.withUTF8Buffer { Array($0) }
        func reference(_ bytes: [UInt8]) -> Bool {
            bytes.count == expected.count && zip(bytes, expected).allSatisfy { (byte, want) in
                byte == want || ((byte | 0x20) == want && (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(want))
            }
        }
        for position in 0..<expected.count {
            for value in 0...255 {
                var bytes = expected
                bytes[position] = UInt8(value)
                let found = bytes.withUnsafeBytes { ASCII.equalsIgnoringCase($0, literal) }
                if found != reference(bytes) { Issue.record("byte \(value) at \(position)") }
            }
        }
        #expect(Array("X-Request-ID-ABC123Z".utf8).withUnsafeBytes { ASCII.equalsIgnoringCase($0, literal) })
        #expect(!Array("x-request-id-abc123".utf8).withUnsafeBytes { ASCII.equalsIgnoringCase($0, literal) })
    }
}
