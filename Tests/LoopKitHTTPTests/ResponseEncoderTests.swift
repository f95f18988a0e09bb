import HTTPTypes
import Testing
@testable import LoopKitHTTP

@Suite("Response encoder: one contiguous buffer per response")
struct ResponseEncoderTests {
    let date = Array("Date: Sun, 06 Nov 1994 08:49:37 GMT\r\n".utf8)

    func encoded(_ body: (inout HTTPResponseEncoder) -> Void) -> String {
        var encoder = HTTPResponseEncoder()
        body(&encoder)
        return String(decoding: encoder.buffer, as: UTF8.self)
    }

    @Test func statusFieldsDateAndLengthInOrder() {
        let text = encoded { encoder in
            encoder.appendHead(HTTPResponse(status: .ok, headerFields: [.contentType: "text/plain"]), framing: .length(2),
                               keepAlive: true, http10: false, date: date)
            Array("hi".utf8).withUnsafeBytes { encoder.appendBody($0) }
        }
        #expect(text == "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nDate: Sun, 06 Nov 1994 08:49:37 GMT\r\nContent-Length: 2\r\n\r\nhi")
    }

    @Test func anIdleEncoderHoldsLittleAndALargeBodysCapacityIsGivenBack() {
        var encoder = HTTPResponseEncoder()
        #expect(encoder.buffer.capacity == 0)  // nothing before the first response
        encoder.appendHead(HTTPResponse(status: .ok), framing: .length(2), keepAlive: true, http10: false, date: date)
        Array("hi".utf8).withUnsafeBytes { encoder.appendBody($0) }
        encoder.written()
        let small = encoder.buffer.capacity
        #expect(small > 0 && small <= HTTPResponseEncoder.keptCapacity)  // kept for the next response
        let large = [UInt8](repeating: 7, count: 100_000)
        encoder.appendHead(HTTPResponse(status: .ok), framing: .length(large.count), keepAlive: true, http10: false, date: date)
        large.withUnsafeBytes { encoder.appendBody($0) }
        encoder.written()
        #expect(encoder.buffer.isEmpty)
        #expect(encoder.buffer.capacity <= HTTPResponseEncoder.keptCapacity)  // 100 KB not kept while idle
    }

    @Test func handlerFramingFieldsAreReplacedByTheServers() {
        let text = encoded { encoder in
            encoder.appendHead(HTTPResponse(status: .notFound, headerFields: [
                .contentLength: "99", .connection: "x", .date: "yesterday", .transferEncoding: "gzip",
                // Names as long as those, kept.
                HTTPField.Name("Vary")!: "1", HTTPField.Name("Set-Cookie")!: "c", HTTPField.Name("Accept-Charset")!: "a",
                HTTPField.Name("If-Modified-Since")!: "i",
            ]), framing: .length(0), keepAlive: false, http10: false, date: date)
        }
        #expect(text == "HTTP/1.1 404 Not Found\r\nVary: 1\r\nSet-Cookie: c\r\nAccept-Charset: a\r\nIf-Modified-Since: i\r\n"
            + "Date: Sun, 06 Nov 1994 08:49:37 GMT\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
    }

    @Test func chunksCarryHexSizesAndTheLastChunkEndsTheBody() {
        let text = encoded { encoder in
            Array(repeating: UInt8(ascii: "a"), count: 26).withUnsafeBytes { encoder.appendChunk($0) }
            [UInt8]().withUnsafeBytes { encoder.appendChunk($0) }
            encoder.appendLastChunk()
        }
        #expect(text == "1a\r\n" + String(repeating: "a", count: 26) + "\r\n0\r\n\r\n")
    }

    @Test func http10KeepAliveIsStated() {
        let text = encoded { encoder in
            encoder.appendHead(HTTPResponse(status: .ok), framing: .length(0), keepAlive: true, http10: true, date: date)
        }
        #expect(text.contains("Connection: keep-alive\r\n"))
    }

    @Test func dateIsIMFFixdate() {
        #expect(String(decoding: HTTPDateCache.fieldLine(for: 784111777), as: UTF8.self) == "Date: Sun, 06 Nov 1994 08:49:37 GMT\r\n")
    }
}
