import LoopKit
import LoopKitNet
import LoopKitTLS
import Testing

/// TLS writes: the buffers of one write batch share records (one `SSL_write` for a head and its body),
/// a large body is encrypted from its own storage, and writes the socket refuses arrive whole and in order
/// (OpenSSL's retry rule kept while records are gathered).
@Suite("TLS write coalescing: one record per head and body, large bodies uncopied, partial writes")
struct TLSWriteCoalescingTests {
    let certificates = TestCertificates.shared

    /// What the server's connection did: records written and bytes copied to share a record, since the
    /// handshake; how it ended.
    struct Written: Sendable, Equatable {
        var records: Int
        var coalesced: Int
        var reason: CloseReason
    }

    /// A one-loop TLS listener whose connections `serve` runs (on the loop, once the handshake is done);
    /// records what each connection wrote once it has ended.
    func withServer(
        _ serve: @escaping @Sendable (Connection) -> Void,
        _ body: (EventLoop, SocketAddress, Recorder<Written>) async throws -> Void
    ) async throws {
        let group = try LoopGroup(threads: 1)
        defer { group.shutdown() }
        var options = ListenerOptions()
        options.tls = try certificates.serverContext()
        let written = Recorder<Written>()
        let listener = try TCPListener.bind(host: "127.0.0.1", port: 0, on: group.loops[0], options: options, onAccept: { connection in
            let handshake = (records: connection.tlsRecordsWritten, coalesced: connection.tlsBytesCoalesced)
            connection.onClose { reason in
                written.record(Written(records: connection.tlsRecordsWritten - handshake.records,
                                       coalesced: connection.tlsBytesCoalesced - handshake.coalesced, reason: reason))
            }
            serve(connection)
        })
        try await body(group.loops[0], listener.localAddress, written)
        await listener.shutdown()
    }

    /// Connects, sends `line` and reads until the server closes.
    func fetch(_ line: String, at address: SocketAddress, on loop: EventLoop) async throws -> [UInt8] {
        let client = try certificates.clientContext()
        return try await onLoop(loop) {
            let connection = try await Connection.connect(to: address, on: loop, tls: client, serverName: "localhost")
            try await connection.send(line + "\n")
            return try await readToEnd(from: connection)
        }
    }

    /// `count` bytes of a pattern that differs from one 16 KiB record to the next, from stream offset `start`.
    static func pattern(_ count: Int, from start: Int = 0) -> Bytes {
        Bytes(unsafeUninitializedCapacity: count) { buffer in
            for index in 0..<count { buffer[index] = Self.patternByte(start + index) }
            return count
        }
    }

    static func patternByte(_ offset: Int) -> UInt8 { UInt8(truncatingIfNeeded: offset &* 131 &+ offset >> 14) }

    static let head = Array("HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n".utf8)

    /// Answers the first line with `head` (copied) and `body` (by reference) from the read callback, so both
    /// are in the loop's write batch, then closes.
    static func answerInTheReadCallback(_ connection: Connection, head: [UInt8], body: Bytes) {
        connection.onRead { bytes in
            guard bytes.contains(UInt8(ascii: "\n")) else { return 0 }
            head.withUnsafeBytes { try? connection.write(copying: $0) }
            try? connection.write(body)
            connection.close()
            return bytes.count
        }
    }

    @Test func aHeadAndItsBodyWrittenInOneReadCallbackGoOutAsOneRecord() async throws {
        let body = Self.pattern(1000)
        try await withServer({ Self.answerInTheReadCallback($0, head: Self.head, body: body) }) { loop, address, written in
            let received = try await fetch("GET", at: address, on: loop)
            #expect(received == Self.head + Array(body))
            #expect(await eventually { written.all.count == 1 })
            #expect(written.all == [Written(records: 1, coalesced: Self.head.count + body.count, reason: .closedLocally)])
        }
    }

    @Test func aHeadAndItsBodyWrittenTogetherOutsideACallbackGoOutAsOneRecord() async throws {
        let body = Array(Self.pattern(1000))
        try await withServer({ connection in
            Self.head.withUnsafeBytes { head in body.withUnsafeBytes { try? connection.write(copying: head, $0) } }  // two iovecs
            connection.close()
        }) { loop, address, written in
            let received = try await fetch("GET", at: address, on: loop)
            #expect(received == Self.head + body)
            #expect(await eventually { written.all.count == 1 })
            #expect(written.all.first?.records == 1)
        }
    }

    /// A 20 KiB body tops the head's record up (2 records, not 3: one record's payload copied); a 1 MiB
    /// body would need as many records either way, so nothing of it is copied (the head goes alone).
    @Test(arguments: [(20 * 1024, 2, 16 * 1024), (1 << 20, 65, 0)])
    func aLargeBodyIsCopiedOnlyWhenThatSavesARecord(bodySize: Int, records: Int, coalesced: Int) async throws {
        let head = Array(repeating: UInt8(ascii: "h"), count: 200)
        let body = Self.pattern(bodySize)
        try await withServer({ Self.answerInTheReadCallback($0, head: head, body: body) }) { loop, address, written in
            let received = try await fetch("GET", at: address, on: loop)
            #expect(received.count == head.count + bodySize)
            #expect(received == head + Array(body))
            #expect(await eventually { written.all.count == 1 })
            #expect(written.all == [Written(records: records, coalesced: coalesced, reason: .closedLocally)])
        }
    }

    /// Sizes around a record's payload, mixed: tiny pieces gathered, large ones split, the record before a
    /// large one topped up.
    static let pieceSizes = [1, 300, 16_384, 7, 20_000, 16_383, 70_000, 2, 5, 9_000, 16_385, 100, 40_000, 3]

    @Test func writesTheSocketRefusesArriveWholeAndInOrder() async throws {
        let refused = Recorder<Int>()  // stream offset at which the socket first refused
        let total = Recorder<Int>()
        try await withServer({ connection in
            Task(executorPreference: connection.loop) {
                var offset = 0
                var index = 0
                func next() -> Bytes {
                    let piece = Self.pattern(Self.pieceSizes[index % Self.pieceSizes.count], from: offset)
                    index += 1
                    offset += piece.count
                    return piece
                }
                // Until the socket refuses (the client does not read yet), then 300 pieces more behind the
                // refused bytes: the queue presents many buffers, retried after SSL_ERROR_WANT_WRITE.
                while connection.bufferedOutputCount == 0 {
                    let piece = next()
                    if index.isMultiple(of: 2) {
                        try? connection.write(piece)
                    } else {
                        piece.withUnsafeBytes { try? connection.write(copying: $0) }
                    }
                }
                refused.record(offset)
                for _ in 0..<300 { try? await connection.send(next()) }
                total.record(offset)
                connection.close()
            }
        }) { loop, address, written in
            let client = try certificates.clientContext()
            let received = try await onLoop(loop) {
                let connection = try await Connection.connect(to: address, on: loop, tls: client, serverName: "localhost")
                _ = await eventually { !refused.all.isEmpty }
                return try await readToEnd(from: connection)
            }
            #expect(!refused.all.isEmpty)
            #expect(total.all.count == 1)
            #expect(received.count == total.all.first)
            let firstWrong = received.indices.first { received[$0] != Self.patternByte($0) }
            #expect(firstWrong == nil)
            #expect(await eventually { written.all.count == 1 })
            #expect(written.all.first?.reason == .closedLocally)
            #expect((written.all.first?.coalesced ?? 0) > 0)
        }
    }
}
