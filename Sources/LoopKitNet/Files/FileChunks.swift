import LoopKit

/// A file read as an `AsyncSequence` of ``Bytes``, with backpressure: at most `readAhead` chunks are read,
/// or being read, ahead of the consumer; a consumer that stops asking stops the reading.
///
/// The reads are positional (`pread`), queued on the file system's pool up to `readAhead` at a time, and
/// handed out in file order. Every chunk but the last has `chunkSize` bytes; the sequence ends after the
/// first shorter chunk (the end of the file). A sequence made from a path opens the file on the first
/// `next()` and closes it when it ends, fails, or its iterator goes away; one made from an ``OpenFile``
/// leaves the file open. A task cancelled while it waits stops the reads not yet started and gets
/// `CancellationError`.
///
/// ```swift
/// for try await chunk in FileSystem(loop: loop).chunks(of: "/var/log/big.log") {
///     try await connection.write(chunk)    // the next chunks are read while this one is written
/// }
/// ```
///
/// Safe from any thread; iterate from one task.
public struct FileChunks: AsyncSequence, Sendable {
    public typealias Element = Bytes
    public typealias Failure = any Error

    /// 256 KiB.
    public static let defaultChunkSize = 256 * 1024
    /// 4 chunks.
    public static let defaultReadAhead = 4

    enum Source: Sendable {
        case path(String, FileSystem)
        case file(OpenFile)
    }

    let source: Source
    let chunkSize: Int
    let readAhead: Int
    let offset: Int64

    init(source: Source, chunkSize: Int, readAhead: Int, offset: Int64) {
        precondition(chunkSize > 0, "FileChunks: chunkSize must be more than 0, got \(chunkSize)")
        precondition(readAhead >= 1, "FileChunks: readAhead must be at least 1, got \(readAhead)")
        self.source = source
        self.chunkSize = chunkSize
        self.readAhead = readAhead
        self.offset = offset
    }

    public func makeAsyncIterator() -> Iterator {
        Iterator(reader: ChunkReader(self))
    }

    /// Hands out the chunks in file order. Iterate from one task.
    public struct Iterator: AsyncIteratorProtocol {
        let reader: ChunkReader

        /// The next chunk, or nil after the last one.
        ///
        /// - Throws: ``FileError``; `CancellationError`; the loop's and the pool's refusals. After an
        ///   error the sequence has ended.
        public mutating func next() async throws -> Bytes? {
            try await reader.next()
        }
    }
}

/// The reads of one iteration of ``FileChunks``: a window of at most `readAhead` reads queued on the pool,
/// handed out in order. Only the iterating task calls ``next()``; pool threads fulfil the reads.
final class ChunkReader: Sendable {
    private struct State {
        var file: OpenFile?
        var ownsFile = false
        var nextOffset: Int64
        var window: [PendingRead] = []
        var finished = false
    }

    private let chunks: FileChunks
    private let state: Lock<State>

    init(_ chunks: FileChunks) {
        self.chunks = chunks
        var initial = State(nextOffset: chunks.offset)
        if case .file(let file) = chunks.source { initial.file = file }
        state = Lock(initial)
    }

    deinit {
        // The consumer went away mid-file: reads not started never run; a file we opened is closed once
        // the reads in flight have ended.
        let (window, file) = state.withLock { state in (state.window, state.ownsFile ? state.file : nil) }
        for read in window { read.cancel() }
        file?.closeWhenIdle()
    }

    func next() async throws -> Bytes? {
        if state.withLock({ $0.finished }) { return nil }
        do {
            try Task.checkCancellation()
            let file = try await openFileIfNeeded()
            let head = try fillWindow(file)
            let bytes = try await withTaskCancellationHandler {
                try await head.value()
            } onCancel: { [self] in
                for read in state.withLock({ $0.window }) { read.cancel() }
            }
            if bytes.count < chunks.chunkSize {
                finish()
                return bytes.isEmpty ? nil : bytes
            }
            return bytes
        } catch {
            finish()
            throw error
        }
    }

    private func openFileIfNeeded() async throws -> OpenFile {
        if let file = state.withLock({ $0.file }) { return file }
        guard case .path(let path, let fileSystem) = chunks.source else { preconditionFailure("a file source has its file") }
        let file = try await fileSystem.open(path)
        state.withLock { state in
            state.file = file
            state.ownsFile = true
        }
        return file
    }

    /// Queues reads until `readAhead` are outstanding, then takes the oldest.
    private func fillWindow(_ file: OpenFile) throws -> PendingRead {
        let chunkSize = chunks.chunkSize
        let pool = file.fileSystem.pool
        return try state.withLock { (state) throws -> PendingRead in
            while state.window.count < chunks.readAhead {
                let read = PendingRead()
                let offset = state.nextOffset
                read.work = try pool.submit({
                    read.fulfil(Result {
                        let fd = try file.acquire(.read)
                        defer { file.release() }
                        return try FileCalls.readChunk(fd, upTo: chunkSize, at: offset, path: file.path)
                    })
                }, onCancel: { reason in read.fulfil(.failure(reason)) })
                state.window.append(read)
                state.nextOffset += Int64(chunkSize)
            }
            return state.window.removeFirst()
        }
    }

    /// Ends the iteration: reads not started never run; a file this reader opened is closed once the
    /// reads in flight have ended.
    private func finish() {
        let (window, file) = state.withLock { state -> ([PendingRead], OpenFile?) in
            state.finished = true
            defer { state.window = [] }
            return (state.window, state.ownsFile ? state.file : nil)
        }
        for read in window { read.cancel() }
        file?.closeWhenIdle()
    }
}

/// One read of the window: fulfilled once by a pool thread (or its cancellation), awaited once.
final class PendingRead: Sendable {
    private enum State {
        case waiting
        case awaited(CheckedContinuation<Bytes, any Error>)
        case done(Result<Bytes, any Error>)
        case handedOver
    }

    private let state = Lock(State.waiting)
    private let handle = Lock<OffloadedWork?>(nil)
    #if LOOPKIT_TSAN
    /// Tells the thread sanitizer that the pool thread's bytes happen before the awaiting task reads them.
    private let handOver = SanitizerKey()
    #endif

    /// The pool's handle for the read, to cancel it.
    var work: OffloadedWork? {
        get { handle.withLock { $0 } }
        set { handle.withLock { $0 = newValue } }
    }

    func cancel() {
        work?.cancel()
    }

    func fulfil(_ result: Result<Bytes, any Error>) {
        #if LOOPKIT_TSAN
        handOver.releasing()
        #endif
        let waiter = state.withLock { state -> CheckedContinuation<Bytes, any Error>? in
            switch state {
            case .waiting:
                state = .done(result)
                return nil
            case .awaited(let continuation):
                state = .handedOver
                return continuation
            case .done, .handedOver:
                return nil
            }
        }
        waiter?.resume(with: result)
    }

    func value() async throws -> Bytes {
        #if LOOPKIT_TSAN
        defer { handOver.acquired() }
        #endif
        return try await withCheckedThrowingContinuation { continuation in
            let ready = state.withLock { state -> Result<Bytes, any Error>? in
                if case .done(let result) = state {
                    state = .handedOver
                    return result
                }
                state = .awaited(continuation)
                return nil
            }
            if let ready { continuation.resume(with: ready) }
        }
    }
}
