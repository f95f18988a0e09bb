import Testing
@testable import LoopKitHTTP

@Suite("Incremental UTF-8 validation")
struct UTF8ValidatorTests {
    /// Validates `bytes` split at every position; returns whether every split agreed, and the verdict.
    func verdict(_ bytes: [UInt8]) -> Bool? {
        var verdicts = Set<Bool>()
        for split in 0...bytes.count {
            var validator = UTF8Validator()
            let valid = validator.validate(Array(bytes[..<split])) && validator.validate(Array(bytes[split...])) && validator.isComplete
            verdicts.insert(valid)
        }
        return verdicts.count == 1 ? verdicts.first : nil
    }

    @Test func acceptsValidTextSplitAnywhere() {
        #expect(verdict(Array("κόσμε, hello, 𝄞, 中文, \u{10FFFF}".utf8)) == true)
        #expect(verdict([]) == true)
    }

    @Test func rejectsOverlongForms() {
        #expect(verdict([0xC0, 0xAF]) == false)
        #expect(verdict([0xE0, 0x80, 0xAF]) == false)
        #expect(verdict([0xF0, 0x80, 0x80, 0xAF]) == false)
    }

    @Test func rejectsSurrogatesAndCodePointsPastTheEnd() {
        #expect(verdict([0xED, 0xA0, 0x80]) == false)          // U+D800
        #expect(verdict([0xF4, 0x90, 0x80, 0x80]) == false)    // U+110000
        #expect(verdict([0xF5, 0x80, 0x80, 0x80]) == false)
    }

    @Test func rejectsStrayAndMissingContinuationBytes() {
        #expect(verdict([0x80]) == false)
        #expect(verdict([0x41, 0xBF]) == false)
        #expect(verdict([0xE2, 0x82]) == false)                // truncated €: not complete
        #expect(verdict([0xE2, 0x41, 0xAC]) == false)
    }

    @Test func failsAtTheFirstBadPieceNotAtTheEnd() {
        var validator = UTF8Validator()
        let first = validator.validate([0xCE, 0xBA, 0xE1])  // κ, then the start of a code point
        #expect(first)
        #expect(validator.isComplete == false)
        let second = validator.validate([0xBD, 0xB9])
        #expect(second)
        let third = validator.validate([0xF4, 0x90])
        #expect(third == false)
    }

    /// The eight-bytes-at-a-time ASCII path hands over to the byte path at any offset: a bad byte or a
    /// multi-byte character anywhere in a long ASCII run is judged as byte by byte.
    @Test func longASCIIRunsWithOneNonASCIICharacterAnywhere() {
        for position in 0..<40 {
            var good = [UInt8](repeating: UInt8(ascii: "a"), count: 40)
            good.replaceSubrange(position..<position, with: Array("é€😀".utf8))
            var validator = UTF8Validator()
            let goodIsValid = validator.validate(good)
            #expect(goodIsValid && validator.isComplete, "valid text with a character at \(position)")
            var bad = [UInt8](repeating: UInt8(ascii: "a"), count: 40)
            bad[position] = 0xC0  // never valid
            var checker = UTF8Validator()
            let badIsValid = checker.validate(bad)
            #expect(!badIsValid, "0xC0 at \(position)")
            var truncated = [UInt8](repeating: UInt8(ascii: "a"), count: 40)
            truncated[position] = 0xE2  // a three-byte lead followed by ASCII
            var third = UTF8Validator()
            let truncatedIsValid = third.validate(truncated)
            if position == 39 {
                #expect(truncatedIsValid && !third.isComplete)  // a lead at the very end: valid so far, incomplete
            } else {
                #expect(!truncatedIsValid, "E2 then ASCII at \(position)")
            }
        }
    }
}
