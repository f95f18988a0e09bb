/// Percent-decoding as WHATWG URL's `percent-decode` and `application/x-www-form-urlencoded` parsing do
/// it: `%XX` becomes its byte, a `%` not followed by two hex digits stays as it is, the bytes are read as
/// UTF-8 (a bad sequence becomes U+FFFD); in a query, `+` is a space. Never fails, as in a browser.
enum PercentDecoding {
    /// `text` percent-decoded; `plusIsSpace` for a query's names and values.
    static func decode(_ text: Substring, plusIsSpace: Bool) -> String {
        let utf8 = text.utf8
        // The common case: nothing to decode, no copy of the bytes.
        guard utf8.contains(where: { $0 == UInt8(ascii: "%") || (plusIsSpace && $0 == UInt8(ascii: "+")) }) else {
            return String(text)
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(utf8.count)
        var index = utf8.startIndex
        while index != utf8.endIndex {
            let byte = utf8[index]
            if byte == UInt8(ascii: "%") {
                let first = utf8.index(after: index)
                if first != utf8.endIndex, let high = hexValue(utf8[first]) {
                    let second = utf8.index(after: first)
                    if second != utf8.endIndex, let low = hexValue(utf8[second]) {
                        bytes.append(high << 4 | low)
                        index = utf8.index(after: second)
                        continue
                    }
                }
                bytes.append(byte)
            } else if plusIsSpace && byte == UInt8(ascii: "+") {
                bytes.append(UInt8(ascii: " "))
            } else {
                bytes.append(byte)
            }
            index = utf8.index(after: index)
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
