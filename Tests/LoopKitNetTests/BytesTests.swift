import LoopKitNet
import Testing

/// `Bytes`: an immutable byte collection whose slices share storage.
@Suite("Bytes")
struct BytesTests {
    @Test func aSliceSharesStorageAndKeepsItsParentsIndices() {
        let bytes = Bytes("hello, loop")
        let slice = bytes[7..<11]
        #expect(slice.startIndex == 7)
        #expect(slice.utf8String == "loop")
        #expect(slice[7] == UInt8(ascii: "l"))
        bytes.withUnsafeBytes { whole in
            slice.withUnsafeBytes { part in #expect(part.baseAddress == whole.baseAddress! + 7) }  // no copy
        }
    }

    @Test func equalBytesAreEqualWhateverTheirStorage() {
        let a = Bytes("abcabc")
        #expect(a[0..<3] == a[3..<6])
        #expect(a[0..<3].hashValue == a[3..<6].hashValue)
        #expect(Bytes() == Bytes([]))
        #expect(a != Bytes("abcab"))
    }

    @Test func spansReadTheBytesWithoutACopy() {
        let bytes: Bytes = [1, 2, 3, 4, 0x10, 0x20]
        let slice = bytes[2..<6]
        #expect(slice.withSpan { span in span.count } == 4)
        #expect(slice.withSpan { span in span[0] } == 3)  // a span counts from 0, not the slice's indices
        let word = slice.withRawSpan { raw in raw.unsafeLoadUnaligned(fromByteOffset: 2, as: UInt16.self) }
        #expect(UInt16(littleEndian: word) == 0x2010)
        #expect(Bytes().withSpan { $0.isEmpty })
    }

    @Test func bytesBuiltInPlaceKeepOnlyWhatWasWritten() {
        let bytes = Bytes(unsafeUninitializedCapacity: 16) { buffer in
            buffer.storeBytes(of: 0x41, toByteOffset: 0, as: UInt8.self)
            buffer.storeBytes(of: 0x42, toByteOffset: 1, as: UInt8.self)
            return 2
        }
        #expect(bytes.utf8String == "AB")
        #expect(bytes.count == 2)
    }
}
