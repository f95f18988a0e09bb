import HTTPTypes
import Testing
@testable import LoopKitHTTP

@Suite("Response encoder: serialised straight into the space its connection lends")
struct ResponseEncoderTests {
    let date = Array("Date: Sun, 06 Nov 1994 08:49:37 GMT\r\n".utf8)

    func encoded(_ body: (inout HTTPResponseEncoder) -> Void) -> String {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 4096, alignment: 1)
        defer { buffer.deallocate() }
        var encoder = HTTPResponseEncoder(into: buffer)
        body(&encoder)
        #expect(encoder.fits)
        return String(decoding: UnsafeRawBufferPointer(rebasing: buffer[..<encoder.count]), as: UTF8.self)
    }

    @Test func statusFieldsDateAndLengthInOrder() {
        let text = encoded { encoder in
            encoder.appendHead(HTTPResponse(status: .ok, headerFields: [.contentType: "text/plain"]), framing: .length(2),
                               keepAlive: true, http10: false, date: date)
            Array("hi".utf8).withUnsafeBytes { encoder.appendBody($0) }
        }
        #expect(text == "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nDate: Sun, 06 Nov 1994 08:49:37 GMT\r\nContent-Length: 2\r\n\r\nhi")
    }

    @Test(arguments: [0, 7, 10, 42, 99, 100, 101, 999, 1_000, 65_535, 123_456, 1_000_000_007, Int.max])
    func contentLengthIsTheLengthInDecimal(length: Int) {
        let text = encoded { encoder in
            encoder.appendHead(HTTPResponse(status: .ok), framing: .length(length), keepAlive: true, http10: false, date: date)
        }
        #expect(text.contains("\r\nContent-Length: \(length)\r\n"))
    }

    /// A response larger than the space lent stores nothing past it and reports the exact size it needs,
    /// the size its connection lends the second time.
    @Test func aResponseThatDoesNotFitReportsTheSizeItNeedsAndWritesNothingPastTheSpace() {
        let response = HTTPResponse(status: .notFound, headerFields: [.contentType: "text/plain", .server: "LoopKit"])
        let body = Array("not here".utf8)
        func encode(_ encoder: inout HTTPResponseEncoder) {
            encoder.appendHead(response, framing: .length(123_456), keepAlive: false, http10: false, date: date)
            body.withUnsafeBytes { encoder.appendBody($0) }
        }
        let whole = encoded(encode)
        for room in [0, 1, 10, whole.utf8.count - 1] {
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: room + 16, alignment: 1)
            defer { buffer.deallocate() }
            buffer.initializeMemory(as: UInt8.self, repeating: 0xEE)
            var encoder = HTTPResponseEncoder(into: UnsafeMutableRawBufferPointer(rebasing: buffer[..<room]))
            encode(&encoder)
            #expect(!encoder.fits, "room \(room)")
            #expect(encoder.count == whole.utf8.count, "room \(room)")
            #expect(buffer[room...].allSatisfy { $0 == 0xEE }, "room \(room)")  // nothing past the space lent
        }
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

    /// A body writer lends a chunk its data's size plus ``HTTPResponseEncoder/chunkCapacity(for:)``'s
    /// margin, once: the largest chunks fit it.
    @Test func aChunkFitsTheCapacityLentForItsSize() {
        for size in [1, 15, 16, 4095, 65_536, 1 << 20] {
            let data = [UInt8](repeating: 1, count: size)
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: HTTPResponseEncoder.chunkCapacity(for: size), alignment: 1)
            defer { buffer.deallocate() }
            var encoder = HTTPResponseEncoder(into: buffer)
            data.withUnsafeBytes { encoder.appendChunk($0) }
            #expect(encoder.fits, "size \(size)")
            #expect(encoder.count == String(size, radix: 16).utf8.count + 4 + size, "size \(size)")
        }
    }

    /// The request id goes after the handler's fields, unless they carry its field: told apart in the
    /// pass that writes them, without a lookup.
    @Test func theRequestIDIsEchoedUnlessTheHandlerSetItsField() {
        let id = HTTPEchoedRequestID(field: .init(HTTPField.Name("X-Request-ID")!), value: "r-7")
        let echoed = encoded { encoder in
            encoder.appendHead(status: .ok, fields: [.contentType: "text/plain"], framing: .length(0), keepAlive: true,
                               http10: false, date: date, requestID: id)
        }
        #expect(echoed == "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nX-Request-ID: r-7\r\n"
            + "Date: Sun, 06 Nov 1994 08:49:37 GMT\r\nContent-Length: 0\r\n\r\n")
        let kept = encoded { encoder in
            encoder.appendHead(status: .ok, fields: [HTTPField.Name("x-request-id")!: "mine"], framing: .length(0), keepAlive: true,
                               http10: false, date: date, requestID: id)
        }
        #expect(kept == "HTTP/1.1 200 OK\r\nx-request-id: mine\r\nDate: Sun, 06 Nov 1994 08:49:37 GMT\r\nContent-Length: 0\r\n\r\n")
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

extension HTTPResponseEncoder {
    /// The head of a swift-http-types response, as the tests write it.
    mutating func appendHead(_ response: HTTPResponse, framing: BodyFraming, keepAlive: Bool, http10: Bool, date: [UInt8]) {
        appendHead(status: response.status, fields: response.headerFields, framing: framing, keepAlive: keepAlive,
                   http10: http10, date: date)
    }
}
