import LoopKit

/// A file opened by ``FileSystem/open(_:options:permissions:)``: reads, writes and `stat` run on the file
/// system's work pool, and a task on the loop resumes in the loop's drain (rule R13).
///
/// Operations may overlap (positional reads of a file in parallel, as ``chunks(chunkSize:readAhead:from:)``
/// does). ``close()`` waits for the operations in flight, then closes the descriptor; operations begun
/// after it are refused with a ``FileError`` whose ``FileError/fileWasClosed`` is true. A file that is never
/// closed is closed when its last reference goes away.
///
/// Safe from any thread. The corresponding libuv calls are `uv_fs_read`, `uv_fs_write`, `uv_fs_fstat`
/// and `uv_fs_close`.
public final class OpenFile: Sendable {
    /// The path the file was opened at.
    public let path: String
    /// The file system whose pool runs the operations.
    public let fileSystem: FileSystem

    /// Who closes the descriptor once the operations in flight have ended.
    private enum Closer {
        /// Nobody has asked to close.
        case none
        /// ``close()`` was called and will look at the count itself.
        case caller
        /// ``close()`` waits for the last operation, which closes and resumes it.
        case waiter(CheckedContinuation<Void, any Error>)
        /// Nobody waits: the last operation closes (``closeWhenIdle()``).
        case lastOperation
    }

    private struct State {
        /// The descriptor; -1 once closed.
        var fd: Int32
        /// Operations running on the pool with the descriptor.
        var users = 0
        var isClosing = false
        var closer = Closer.none

        /// Takes the descriptor to close it (it is -1 afterwards).
        mutating func takeDescriptor() -> Int32? {
            guard fd >= 0 else { return nil }
            defer { fd = -1 }
            return fd
        }
    }

    private let state: Lock<State>

    init(fd: Int32, path: String, fileSystem: FileSystem) {
        self.path = path
        self.fileSystem = fileSystem
        state = Lock(State(fd: fd))
    }

    deinit {
        // No operation is in flight (each holds a reference); a file nobody closed is closed now.
        if let fd = state.withLock({ $0.takeDescriptor() }) {
            do { try FileCalls.closeDescriptor(fd, path: path) } catch { /* nobody is left to tell */ }
        }
    }

    /// Whether ``close()`` has been called. Safe from any thread.
    public var isClosed: Bool { state.withLock { $0.isClosing } }

    /// The descriptor, for a caller that uses it itself (`sendfile(2)` on the loop); nil once ``close()``
    /// has been called. It stays valid only until the caller closes the file: whoever calls this must not
    /// close the file while using it. Safe from any thread.
    package var descriptor: Int32? { state.withLock { $0.isClosing || $0.fd < 0 ? nil : $0.fd } }

    // MARK: Operations

    /// Reads up to `count` bytes.
    ///
    /// - Parameters:
    ///   - count: The most bytes to read; more than 0.
    ///   - offset: Where to read (`pread`); nil reads at the file's position and moves it (`read`).
    /// - Returns: The bytes read: fewer than `count` near the end of the file, empty at the end.
    /// - Throws: ``FileError``; `CancellationError`; the pool's and the loop's refusals.
    ///
    /// Safe from any thread or task.
    public func read(upTo count: Int, at offset: Int64? = nil) async throws -> Bytes {
        precondition(count > 0, "OpenFile.read: count must be more than 0, got \(count)")
        return try await using(.read) { [path] fd in try FileCalls.readChunk(fd, upTo: count, at: offset, path: path) }
    }

    /// Writes all of `bytes`.
    ///
    /// - Parameters:
    ///   - bytes: What to write.
    ///   - offset: Where to write (`pwrite`); nil writes at the file's position and moves it (`write`).
    /// - Throws: ``FileError``; `CancellationError`; the pool's and the loop's refusals.
    ///
    /// Safe from any thread or task.
    public func write(_ bytes: Bytes, at offset: Int64? = nil) async throws {
        try await using(.write) { [path] fd in try FileCalls.writeAll(fd, bytes, at: offset, path: path) }
    }

    /// What `fstat` tells about the file.
    ///
    /// - Throws: ``FileError``; `CancellationError`; the pool's and the loop's refusals.
    ///
    /// Safe from any thread or task.
    public func info() async throws -> FileInfo {
        try await using(.stat) { [path] fd in try FileCalls.info(of: fd, path: path) }
    }

    /// Reads the file as a sequence of chunks, reading ahead at most `readAhead` chunks (see ``FileChunks``).
    ///
    /// - Parameters:
    ///   - chunkSize: The size of each chunk but the last; more than 0.
    ///   - readAhead: How many chunks may be read (or being read) before the consumer asks for them; at least 1.
    ///   - offset: Where to start.
    ///
    /// Safe from any thread. The file stays open when the sequence ends.
    public func chunks(chunkSize: Int = FileChunks.defaultChunkSize, readAhead: Int = FileChunks.defaultReadAhead,
                       from offset: Int64 = 0) -> FileChunks {
        FileChunks(source: .file(self), chunkSize: chunkSize, readAhead: readAhead, offset: offset)
    }

    /// Closes the file once the operations that have started have ended; operations not yet started
    /// are refused (``FileError/fileWasClosed``).
    ///
    /// - Throws: ``FileError`` from `close(2)` (the descriptor is released all the same), or with
    ///   ``FileError/fileWasClosed`` when the file was already closed.
    ///
    /// Safe from any thread or task. The corresponding libuv call is `uv_fs_close`.
    public func close() async throws {
        try state.withLock { (state) throws(FileError) in
            guard !state.isClosing else { throw .closed(.close, path: path) }
            state.isClosing = true
            state.closer = .caller
        }
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            let fd = state.withLock { state -> Int32? in
                if state.users == 0 { return state.takeDescriptor() }
                state.closer = .waiter(continuation)
                return nil
            }
            if let fd { continuation.resume(with: closing(fd)) }
        }
    }

    /// Closes the file without waiting: now if nothing is in flight, else when the last operation ends.
    /// A `close(2)` error then has no one to go to. For a reader that goes away mid-file.
    func closeWhenIdle() {
        let fd = state.withLock { state -> Int32? in
            guard !state.isClosing else { return nil }
            state.isClosing = true
            state.closer = .lastOperation
            return state.users == 0 ? state.takeDescriptor() : nil
        }
        if let fd { _ = closing(fd) }
    }

    private func closing(_ fd: Int32) -> Result<Void, any Error> {
        Result { () throws(FileError) in try FileCalls.closeDescriptor(fd, path: path) }.mapError { $0 as any Error }
    }

    // MARK: In-flight accounting

    /// Runs `body` with the descriptor on the pool, counted as in flight so that a close waits for it.
    private func using<Value: Sendable>(_ operation: FileError.Operation,
                                        _ body: @escaping @Sendable (Int32) throws -> Value) async throws -> Value {
        try await fileSystem.run { [self] in
            let fd = try acquire(operation)
            defer { release() }
            return try body(fd)
        }
    }

    /// Counts one more operation in flight and returns the descriptor, or refuses a closed file.
    /// Call on the pool thread that runs the operation.
    func acquire(_ operation: FileError.Operation) throws(FileError) -> Int32 {
        try state.withLock { (state) throws(FileError) -> Int32 in
            guard !state.isClosing, state.fd >= 0 else { throw .closed(operation, path: path) }
            state.users += 1
            return state.fd
        }
    }

    /// One operation ended: the last one after a close closes the descriptor (and resumes ``close()``).
    func release() {
        let (fd, waiter) = state.withLock { state -> (Int32?, CheckedContinuation<Void, any Error>?) in
            state.users -= 1
            guard state.isClosing, state.users == 0 else { return (nil, nil) }
            switch state.closer {
            case .waiter(let waiter):
                state.closer = .none
                return (state.takeDescriptor(), waiter)
            case .lastOperation:
                state.closer = .none
                return (state.takeDescriptor(), nil)
            case .none, .caller:
                return (nil, nil)
            }
        }
        guard let fd else { return }
        let result = closing(fd)
        waiter?.resume(with: result)
    }
}
