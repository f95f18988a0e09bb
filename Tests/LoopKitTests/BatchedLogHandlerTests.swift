import Glibc
import Logging
import LoopDemoKit
import Testing

/// The demo's batched log handler: every line arrives, in order, formatted, once flushed.
@Suite("Batched log handler")
struct BatchedLogHandlerTests {
    @Test func linesArriveInOrderWithTheirLevelLabelAndMetadataOnceFlushed() throws {
        var fds: [Int32] = [-1, -1]
        #expect(pipe(&fds) == 0)
        defer { close(fds[0]) }
        let sink = BatchedLogHandler.Sink(fd: fds[1], interval: .seconds(60))  // only explicit flushes here
        var logger = Logger(label: "test.batch") { BatchedLogHandler(label: $0, sink: sink) }
        logger.logLevel = .info
        logger.info("first")
        logger.debug("dropped: below the level")
        logger.warning("second", metadata: ["request": "42"])
        for index in 0..<1_000 { logger.info("line \(index)") }
        sink.flush()
        close(fds[1])
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while case let count = read(fds[0], &chunk, chunk.count), count > 0 { bytes += chunk[..<count] }
        let lines = String(decoding: bytes, as: UTF8.self).split(separator: "\n")
        #expect(lines.count == 1_002)
        #expect(lines[0].hasSuffix(" info test.batch: first"))
        #expect(lines[1].hasSuffix(" warning test.batch: second request=42"))
        #expect(lines[1_001].hasSuffix(" info test.batch: line 999"))
        #expect(lines[0].count > 20 && lines[0].dropFirst(4).first == "-")  // a YYYY-MM-DD… timestamp first
    }
}
