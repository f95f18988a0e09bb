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
}
