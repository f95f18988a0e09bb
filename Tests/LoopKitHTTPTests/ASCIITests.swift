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
}
