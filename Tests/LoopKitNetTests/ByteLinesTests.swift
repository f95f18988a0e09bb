import LoopKit
@testable import LoopKitNet
import Testing

/// `inbound.lines()`: lines however the chunks cut them, `\r\n` and `\n`, the last line without a newline,
/// and a limit on the length (issue 47).
@Suite("Lines of a byte stream")
struct ByteLinesTests {
    /// Chunks given up front, as a connection's inbound would give them.
    struct Chunks: AsyncSequence {
        typealias Element = Bytes
        typealias Failure = NetError
        let chunks: [String]
        func makeAsyncIterator() -> Iterator { Iterator(chunks: chunks[...]) }
        struct Iterator: AsyncIteratorProtocol {
            typealias Element = Bytes
            typealias Failure = NetError
            var chunks: ArraySlice<String>
            mutating func next() async throws(NetError) -> Bytes? { chunks.popFirst().map { Bytes($0) } }
        }
    }

    static func lines(_ chunks: [String], maxLength: Int = 64 * 1024) async throws(NetError) -> [String] {
        var lines: [String] = []
        for try await line in Chunks(chunks: chunks).lines(maxLength: maxLength) { lines.append(line) }
        return lines
    }

    @Test("Lines split anywhere by the chunks come out whole; CRLF and LF both end a line; empty lines kept")
    func linesAcrossChunks() async throws {
        #expect(try await Self.lines(["al", "pha\nbe", "ta\r", "\n\ngam", "ma"]) == ["alpha", "beta", "", "gamma"])
        #expect(try await Self.lines(["one\n"]) == ["one"])
        #expect(try await Self.lines([]) == [])
        #expect(try await Self.lines(["\r\n"]) == [""])
    }

    @Test("A line past the limit throws lineTooLong, with or without its newline; one at the limit is taken")
    func lengthLimit() async throws {
        #expect(try await Self.lines(["abcd\nefgh"], maxLength: 4) == ["abcd", "efgh"])
        await #expect(throws: NetError.lineTooLong(limit: 4)) { try await Self.lines(["abcde\n"], maxLength: 4) }
        await #expect(throws: NetError.lineTooLong(limit: 4)) { try await Self.lines(["ab", "cde", "fgh"], maxLength: 4) }
    }

    @Test("A child's standard output read as lines")
    func childOutputLines() async throws {
        let group = try LoopGroup(threads: 1)
        defer { group.shutdown() }
        let loop = group.loops[0]
        let lines = try await onLoop(loop) { () throws -> [String] in
            let child = try ChildProcess.spawn("/bin/sh", arguments: ["-c", "printf 'first\\nsecond\\r\\nlast'"],
                                               standardInput: .null, on: loop)
            var lines: [String] = []
            for try await line in child.standardOutput!.inbound.lines() { lines.append(line) }
            _ = await child.termination
            return lines
        }
        #expect(lines == ["first", "second", "last"])
    }
}
