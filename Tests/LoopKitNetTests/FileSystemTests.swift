import Foundation
import LoopKit
import LoopKitNet
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A fresh directory under the system's temporary directory, removed at the end of `body`.
func withTemporaryDirectory<T>(_ body: (String) async throws -> T) async throws -> T {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("loopkit-files-\(UUID().uuidString)").path
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
    defer { try? FileManager.default.removeItem(atPath: path) }
    return try await body(path)
}

/// `count` bytes of a pattern that differs at every offset modulo 251 (so a chunk out of place shows).
func patternBytes(_ count: Int) -> [UInt8] {
    (0..<count).map { UInt8($0 % 251) }
}

/// Files on the work pool: open/read/write/stat/rename/unlink/mkdir/readdir, typed errors, closed handles,
/// and a file read as chunks with backpressure.
@Suite("Files")
struct FileSystemTests {
    @Test("Written bytes read back; reads end with an empty chunk; info tells the size")
    func writeThenRead() async throws {
        let files = FileSystem(loop: try EventLoop())
        try await withTemporaryDirectory { directory in
            let path = directory + "/a.txt"
            let out = try await files.open(path, options: .replace)
            try await out.write(Bytes("hello, "))
            try await out.write(Bytes("files"))
            try await out.write(Bytes("F"), at: 0)
            try await out.close()

            let file = try await files.open(path)
            #expect(try await file.read(upTo: 100).utf8String == "Fello, files")
            #expect(try await file.read(upTo: 100).isEmpty)
            #expect(try await file.read(upTo: 4, at: 7).utf8String == "file")
            let info = try await file.info()
            #expect(info.size == 12 && info.kind == .regularFile && info.permissions == 0o644)
            try await file.close()
            #expect(file.isClosed)
        }
    }

    @Test("stat, rename, unlink, mkdir, rmdir and readdir")
    func directoryOperations() async throws {
        let files = FileSystem(loop: try EventLoop())
        try await withTemporaryDirectory { directory in
            try await files.createDirectory(at: directory + "/sub", permissions: 0o700)
            for name in ["one", "two"] {
                let file = try await files.open(directory + "/" + name, options: .replace)
                try await file.write(Bytes(name))
                try await file.close()
            }
            let entries = try await files.contentsOfDirectory(at: directory).sorted { $0.name < $1.name }
            #expect(entries.map(\.name) == ["one", "sub", "two"])
            #expect(entries.map(\.kind) == [.regularFile, .directory, .regularFile])
            #expect(try await files.info(at: directory + "/sub").permissions == 0o700)

            try await files.rename(directory + "/one", to: directory + "/sub/uno")
            #expect(try await files.info(at: directory + "/sub/uno").size == 3)
            try await files.removeFile(at: directory + "/sub/uno")
            try await files.removeDirectory(at: directory + "/sub")
            #expect(try await files.contentsOfDirectory(at: directory).map(\.name) == ["two"])

            symlink(directory + "/two", directory + "/link")
            #expect(try await files.info(at: directory + "/link").kind == .regularFile)
            #expect(try await files.info(at: directory + "/link", followingLinks: false).kind == .symbolicLink)
        }
    }

    @Test("A failure is a FileError with the operation, the path, the errno and a message")
    func errorsNameOperationPathAndErrno() async throws {
        let files = FileSystem(loop: try EventLoop())
        try await withTemporaryDirectory { directory in
            let missing = directory + "/missing"
            await #expect(throws: FileError(.open, path: missing, code: ENOENT)) { try await files.open(missing) }
            await #expect(throws: FileError(.stat, path: missing, code: ENOENT)) { try await files.info(at: missing) }
            await #expect(throws: FileError(.unlink, path: missing, code: ENOENT)) { try await files.removeFile(at: missing) }
            await #expect(throws: FileError(.mkdir, path: directory, code: EEXIST)) { try await files.createDirectory(at: directory) }
            await #expect(throws: FileError(.readdir, path: missing, code: ENOENT)) { try await files.contentsOfDirectory(at: missing) }
            await #expect(throws: FileError(.rename, path: missing, code: ENOENT, otherPath: directory + "/b")) {
                try await files.rename(missing, to: directory + "/b")
            }
            let message = FileError(.open, path: missing, code: ENOENT).description
            #expect(message == "open '\(missing)' failed: No such file or directory (errno 2)")
            #expect(FileError(.rename, path: "a", code: ENOENT, otherPath: "b").description.hasPrefix("rename 'a' to 'b' failed"))
        }
    }

    @Test("A closed file refuses every operation with fileWasClosed; closing twice is refused too")
    func closedFileRefusesOperations() async throws {
        let files = FileSystem(loop: try EventLoop())
        try await withTemporaryDirectory { directory in
            let file = try await files.open(directory + "/c", options: .replace)
            try await file.close()
            await #expect(throws: FileError.self) { try await file.read(upTo: 1) }
            do {
                _ = try await file.write(Bytes("x"))
                Issue.record("a write to a closed file succeeded")
            } catch let error as FileError {
                #expect(error.fileWasClosed && error.operation == .write && error.code == EBADF)
                #expect(error.description.hasSuffix("failed: the file was closed"))
            }
            await #expect(throws: FileError.self) { try await file.info() }
            await #expect(throws: FileError.self) { try await file.close() }
        }
    }

    @Test("close waits for the operations in flight, then closes")
    func closeWaitsForOperationsInFlight() async throws {
        let pool = try WorkPool(threads: 2)
        defer { pool.shutdown() }
        let files = FileSystem(loop: try EventLoop(), pool: pool)
        try await withTemporaryDirectory { directory in
            let fifo = directory + "/fifo"
            #expect(mkfifo(fifo, 0o600) == 0)
            let file = try await files.open(fifo, options: [.read, .write])  // O_RDWR: opens without a peer
            let reading = Task { try await file.read(upTo: 5) }              // blocks on its pool thread
            await pollUntil { pool.activeCount == 1 }
            let closing = Task { try await file.close() }
            await pollUntil { file.isClosed }
            await #expect(throws: FileError.self) { try await file.read(upTo: 1) }  // refused: closing
            let writer = open(fifo, O_WRONLY)
            #expect(write(writer, "hello", 5) == 5)
            Glibc.close(writer)
            #expect(try await reading.value.utf8String == "hello")
            try await closing.value
        }
    }

    @Test("chunks reads a whole file in order: full chunks, then the short last one")
    func chunksReadTheWholeFile() async throws {
        let files = FileSystem(loop: try EventLoop())
        try await withTemporaryDirectory { directory in
            let path = directory + "/big"
            let content = patternBytes(1_000_000 + 123)
            #expect(FileManager.default.createFile(atPath: path, contents: Data(content)))
            var received: [UInt8] = []
            var sizes: [Int] = []
            for try await chunk in files.chunks(of: path, chunkSize: 65_536, readAhead: 3) {
                received.append(contentsOf: chunk)
                sizes.append(chunk.count)
            }
            #expect(received == content)
            #expect(sizes.dropLast().allSatisfy { $0 == 65_536 } && sizes.last == 1_000_123 % 65_536)

            // A file of an exact number of chunks ends with no empty chunk; an empty file has none.
            #expect(FileManager.default.createFile(atPath: path, contents: Data(patternBytes(8_192))))
            var count = 0
            for try await _ in files.chunks(of: path, chunkSize: 4_096) { count += 1 }
            #expect(count == 2)
            #expect(FileManager.default.createFile(atPath: path, contents: Data()))
            for try await _ in files.chunks(of: path) { Issue.record("an empty file gave a chunk") }
        }
    }

    @Test("chunks reads at most readAhead chunks ahead of its consumer")
    func chunksReadAheadIsBounded() async throws {
        let pool = try WorkPool(threads: 2)
        defer { pool.shutdown() }
        let files = FileSystem(loop: try EventLoop(), pool: pool)
        try await withTemporaryDirectory { directory in
            let path = directory + "/big"
            #expect(FileManager.default.createFile(atPath: path, contents: Data(patternBytes(100 * 4_096))))
            var iterator = files.chunks(of: path, chunkSize: 4_096, readAhead: 3).makeAsyncIterator()
            _ = try await iterator.next()
            pool.waitUntilIdle()
            #expect(pool.completedCount == 1 + 3)  // the open, then 3 reads: the one handed out and 2 ahead
            _ = try await iterator.next()
            _ = try await iterator.next()
            pool.waitUntilIdle()
            #expect(pool.completedCount == 1 + 5)  // 3 handed out, still 2 ahead: the consumer sets the pace
        }
    }

    @Test("chunks of an OpenFile start where asked and leave the file open; a missing file fails once")
    func chunksOfAnOpenFile() async throws {
        let files = FileSystem(loop: try EventLoop())
        try await withTemporaryDirectory { directory in
            let path = directory + "/f"
            #expect(FileManager.default.createFile(atPath: path, contents: Data(patternBytes(10_000))))
            let file = try await files.open(path)
            var received: [UInt8] = []
            for try await chunk in file.chunks(chunkSize: 3_000, from: 1_000) { received.append(contentsOf: chunk) }
            #expect(received == Array(patternBytes(10_000)[1_000...]))
            #expect(try await file.read(upTo: 2, at: 0) == Bytes([0, 1]))  // still open
            try await file.close()

            var missing = files.chunks(of: directory + "/missing").makeAsyncIterator()
            await #expect(throws: FileError(.open, path: directory + "/missing", code: ENOENT)) { try await missing.next() }
            #expect(try await missing.next() == nil)
        }
    }

    @Test("A task on the loop resumes on the loop's thread (R13); a loop that has shut down refuses new calls")
    func resultsReturnToTheLoop() async throws {
        let group = try LoopGroup(threads: 1)
        defer { group.shutdown() }
        let loop = group.next()
        let files = FileSystem(loop: loop)
        try await withTemporaryDirectory { directory in
            let onLoop = try await Task(executorPreference: loop) {
                _ = try await files.info(at: directory)
                return loop.isCurrent
            }.value
            #expect(onLoop)
        }
        let stopped = try EventLoop()
        stopped.shutdown()
        await #expect(throws: EventLoopError.shutDown) { try await FileSystem(loop: stopped).info(at: "/") }
    }
}

/// Polls `condition` until it holds, suspending between polls (a state to wait for, not an order).
func pollUntil(_ condition: () -> Bool) async {
    while !condition() { try? await Task.sleep(for: .milliseconds(1)) }
}
