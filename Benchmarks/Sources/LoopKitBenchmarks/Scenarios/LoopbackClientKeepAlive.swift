import Foundation

// One keep-alive HTTP request on a plain client socket, for the idle keep-alive connection row of
// `idlemem`: the connection is then left open and idle.

extension LoopbackClient {
    /// The request every connection sends once.
    static let helloRequest = Array("GET /hello HTTP/1.1\r\nHost: bench\r\n\r\n".utf8)

    /// Sends ``helloRequest`` on `fd` (a connected socket) and reads the whole response: its head, then
    /// as many body bytes as its `Content-Length` says. The socket is made blocking with send and receive
    /// timeouts of `timeoutSeconds`, so a server that does not answer fails the request instead of
    /// hanging it. Returns nil when a `200` response arrived whole, or what went wrong.
    static func requestHello(on fd: Int32, timeoutSeconds: Int) -> String? {
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
        var timeout = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        _ = setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        _ = setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))

        var sent = 0
        while sent < helloRequest.count {
            let n = helloRequest.withUnsafeBytes {
                send(fd, $0.baseAddress! + sent, helloRequest.count - sent, Int32(MSG_NOSIGNAL))
            }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { return "send() failed: errno \(errno)" }
            sent += n
        }

        let headEnd = Array("\r\n\r\n".utf8)
        var response: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        var expected: Int?  // the whole response's length, once its head is in
        while expected.map({ response.count < $0 }) ?? true {
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress!, $0.count, 0) }
            if n < 0, errno == EINTR { continue }
            if n < 0, errno == EAGAIN || errno == EWOULDBLOCK {
                return "no whole response within \(timeoutSeconds) s (\(response.count) bytes received)"
            }
            guard n > 0 else {
                return n == 0 ? "the server closed the connection after \(response.count) bytes of its response"
                    : "recv() failed: errno \(errno)"
            }
            response += chunk[..<n]
            guard expected == nil, let end = firstRange(of: headEnd, in: response) else { continue }
            let head = String(decoding: response[..<end], as: UTF8.self)
            guard head.hasPrefix("HTTP/1.1 200") else {
                return "response \"\(head.prefix(while: { $0 != "\r" }))\" instead of 200"
            }
            let length = head.split(separator: "\r\n").lazy.compactMap { line -> Int? in
                let parts = line.split(separator: ":", maxSplits: 1)
                guard parts.count == 2, parts[0].lowercased() == "content-length" else { return nil }
                return Int(parts[1].trimmingCharacters(in: .whitespaces))
            }.first
            guard let length else { return "a response without Content-Length" }
            expected = end + headEnd.count + length
        }
        return response.count == expected ? nil : "\(response.count - expected!) bytes more than the response"
    }

    /// Where `needle` first starts in `bytes`, or nil.
    private static func firstRange(of needle: [UInt8], in bytes: [UInt8]) -> Int? {
        guard bytes.count >= needle.count else { return nil }
        return (0...(bytes.count - needle.count)).first { start in
            bytes[start..<(start + needle.count)].elementsEqual(needle)
        }
    }
}
