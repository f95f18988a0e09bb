import LoopKit

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

extension Connection {
    /// Whether a write now stays at or below ``ConnectionOptions/writeHighWaterMark`` and the connection
    /// accepts writes. Call on the loop's thread.
    public var isWritable: Bool {
        checkThread()
        return machine.acceptsWrites && pendingOutputCount <= profile.options.writeHighWaterMark
    }

    /// Bytes written and not yet sent. Call on the loop's thread.
    public var bufferedOutputCount: Int {
        checkThread()
        return pendingOutputCount
    }

    /// Bytes the connection has sent so far: taken by the kernel (or, in memory, by the partner). A writer
    /// that compares it over time sees whether a peer still takes its output. Call on the loop's thread.
    public var bytesSent: UInt64 {
        checkThread()
        return sentByteCount
    }

    /// Whether the connection is closing: ``close()`` was called and output is still being sent.
    /// Call on the loop's thread.
    public var isClosing: Bool {
        checkThread()
        if case .closing = machine.state { return true }
        return false
    }

    /// Queues `bytes` without copying them: the connection holds the storage by reference until the
    /// bytes are sent.
    ///
    /// Never suspends and is never refused for being above the high-water mark: check ``isWritable``, or
    /// use ``send(_:)-(Bytes)`` from async code, to respect it. Outside a read handler the bytes go to the
    /// socket at once (as much as it takes); inside one, with the handler's other writes when it returns.
    ///
    /// - Parameter bytes: The bytes to send.
    /// - Throws: ``NetError/connectionClosed(_:)`` once the connection is closing, closed, or its output
    ///   was shut down.
    ///
    /// Call on the loop's thread. The corresponding system call is `writev`.
    public func write(_ bytes: Bytes) throws(NetError) {
        try checkWritable()
        guard !bytes.isEmpty else { return }
        if batchIsOpen {
            shared.append(bytes)
        } else if output.isEmpty {
            let sent = sendNow(bytes.baseAddress!, bytes.count)
            if endIfSendFailed() { return }
            if sent < bytes.count { output.append(bytes[(bytes.startIndex + sent)...]) }
        } else {
            output.append(bytes)
        }
        didQueue()
    }

    /// Queues a copy of `buffer` (one copy, when the socket does not take it at once).
    ///
    /// - Parameter buffer: The bytes to send; only read during the call.
    /// - Throws: As ``write(_:)-(Bytes)``.
    ///
    /// Call on the loop's thread. The corresponding system call is `writev`.
    public func write(copying buffer: UnsafeRawBufferPointer) throws(NetError) {
        try checkWritable()
        guard !buffer.isEmpty else { return }
        if batchIsOpen {
            shared.appendCopy(buffer)
        } else if output.isEmpty {
            let sent = sendNow(UnsafeMutableRawPointer(mutating: buffer.baseAddress!), buffer.count)
            if endIfSendFailed() { return }
            if sent < buffer.count { output.append(Bytes(copying: UnsafeRawBufferPointer(rebasing: buffer[sent...]))) }
        } else {
            output.append(Bytes(copying: buffer))
        }
        didQueue()
    }

    /// Queues a copy of `head` followed by `body` as one write: both go to the socket in one `writev`
    /// when it takes them at once, and only what it did not take is copied (into the write batch inside
    /// a read handler).
    ///
    /// - Parameters:
    ///   - head: The first bytes (a frame header, say); only read during the call.
    ///   - body: The bytes that follow; only read during the call.
    /// - Throws: As ``write(_:)-(Bytes)``.
    ///
    /// Call on the loop's thread. The corresponding system call is `writev`.
    package func write(copying head: UnsafeRawBufferPointer, _ body: UnsafeRawBufferPointer) throws(NetError) {
        try checkWritable()
        let total = head.count + body.count
        guard total > 0 else { return }
        if batchIsOpen {
            shared.appendCopy(capacity: total) { target in Self.copy(head, body, from: 0, into: target) }
        } else if output.isEmpty {
            var vectors = (iovec(iov_base: UnsafeMutableRawPointer(mutating: head.baseAddress), iov_len: head.count),
                           iovec(iov_base: UnsafeMutableRawPointer(mutating: body.baseAddress), iov_len: body.count))
            let sent = withUnsafeMutablePointer(to: &vectors) {
                $0.withMemoryRebound(to: iovec.self, capacity: 2) { transmit($0, 2) }
            }
            if endIfSendFailed() { return }
            if sent < total {
                output.append(Bytes(unsafeUninitializedCapacity: total - sent) { Self.copy(head, body, from: sent, into: $0) })
            }
        } else {
            output.append(Bytes(unsafeUninitializedCapacity: total) { Self.copy(head, body, from: 0, into: $0) })
        }
        didQueue()
    }

    /// Copies the bytes of `head` then `body` from offset `start` of the two on into `target`, which has
    /// room for them; returns the count copied.
    private static func copy(_ head: UnsafeRawBufferPointer, _ body: UnsafeRawBufferPointer, from start: Int,
                             into target: UnsafeMutableRawBufferPointer) -> Int {
        var written = 0
        if start < head.count {
            let part = UnsafeRawBufferPointer(rebasing: head[start...])
            target.baseAddress!.copyMemory(from: part.baseAddress!, byteCount: part.count)
            written = part.count
        }
        let bodyStart = Swift.max(0, start - head.count)
        if bodyStart < body.count {
            (target.baseAddress! + written).copyMemory(from: body.baseAddress! + bodyStart, byteCount: body.count - bodyStart)
            written += body.count - bodyStart
        }
        return written
    }

    /// Queues the UTF-8 bytes of `string` (one copy at most).
    ///
    /// - Throws: As ``write(_:)-(Bytes)``.
    ///
    /// Call on the loop's thread. The corresponding system call is `writev`.
    public func write(_ string: String) throws(NetError) {
        var string = string
        let result = string.withUTF8 { utf8 in
            Result { () throws(NetError) in try write(copying: UnsafeRawBufferPointer(utf8)) }
        }
        try result.get()
    }

    /// Lets `body` write up to `capacity` bytes straight into output space: inside a read handler, the
    /// loop's write batch, so a response head is serialised where it is sent from. Outside one, with
    /// nothing queued, the loop's write batch for this one write, sent at once: only what the socket does
    /// not take is copied (no allocation when it takes it all).
    ///
    /// - Parameters:
    ///   - capacity: The most bytes `body` may write.
    ///   - body: Writes from the start of the buffer and returns how many bytes it wrote (0: nothing is
    ///     sent).
    /// - Throws: As ``write(_:)-(Bytes)``.
    ///
    /// Call on the loop's thread.
    public func write(reservingCapacity capacity: Int, _ body: (UnsafeMutableRawBufferPointer) -> Int) throws(NetError) {
        try checkWritable()
        guard capacity > 0 else { return }
        if batchIsOpen {
            shared.appendCopy(capacity: capacity, body)
            didQueue()
        } else if output.isEmpty, shared.openBatch(for: ObjectIdentifier(self)) {
            shared.appendCopy(capacity: capacity, body)
            shared.closeBatch(send: { vectors, count in transmit(vectors, count) }, keep: { bytes in output.append(bytes) })
            if endIfSendFailed() { return }
            didQueue()
        } else {
            try write(Self.reservedBytes(capacity: capacity, body))
        }
    }

    /// As ``write(reservingCapacity:_:)``, then `bytes` by reference (no copy) when `body` wrote anything,
    /// and `trailer` after them when given: a response head serialised into the batch and a body sent from
    /// its own storage, or a chunk's size line, its data and its CRLF, in the same `writev`.
    ///
    /// - Parameters:
    ///   - capacity: The most bytes `body` may write.
    ///   - body: Writes from the start of the buffer and returns how many bytes it wrote (0: nothing is
    ///     sent, `bytes` and `trailer` neither).
    ///   - bytes: Sent after what `body` wrote.
    ///   - trailer: Sent after `bytes`, by reference too.
    /// - Throws: As ``write(_:)-(Bytes)``.
    ///
    /// Call on the loop's thread.
    package func write(reservingCapacity capacity: Int, _ body: (UnsafeMutableRawBufferPointer) -> Int,
                       followedBy bytes: Bytes, then trailer: Bytes? = nil) throws(NetError) {
        try checkWritable()
        guard capacity > 0 else { return }
        var wrote = false
        func counting(_ buffer: UnsafeMutableRawBufferPointer) -> Int {
            let written = body(buffer)
            wrote = written > 0
            return written
        }
        if batchIsOpen {
            shared.appendCopy(capacity: capacity, counting)
            if wrote { appendToBatch(bytes, then: trailer) }
            didQueue()
        } else if output.isEmpty, shared.openBatch(for: ObjectIdentifier(self)) {
            shared.appendCopy(capacity: capacity, counting)
            if wrote { appendToBatch(bytes, then: trailer) }
            shared.closeBatch(send: { vectors, count in transmit(vectors, count) }, keep: { bytes in output.append(bytes) })
            if endIfSendFailed() { return }
            didQueue()
        } else {
            let head = Self.reservedBytes(capacity: capacity, counting)
            guard wrote else { return }
            output.append(head)
            output.append(bytes)
            if let trailer { output.append(trailer) }
            didQueue()
        }
    }

    // MARK: Internals (loop thread)

    /// Appends `bytes`, then `trailer` if any, to the open write batch, both by reference.
    @inline(__always)
    private func appendToBatch(_ bytes: Bytes, then trailer: Bytes?) {
        shared.append(bytes)
        if let trailer { shared.append(trailer) }
    }

    /// What a reserved write's `body` writes, in bytes of their own: the write's path when its output
    /// cannot go into the loop's write batch. Stops the process when `body` says it wrote more than it
    /// reserved (the batch's path checks the same).
    private static func reservedBytes(capacity: Int, _ body: (UnsafeMutableRawBufferPointer) -> Int) -> Bytes {
        Bytes(unsafeUninitializedCapacity: capacity) { buffer in
            let written = body(buffer)
            precondition(written >= 0 && written <= capacity, "LoopKitNet: wrote \(written) bytes into \(capacity)")
            return written
        }
    }

    /// Bytes queued or in this connection's open write batch.
    var pendingOutputCount: Int { output.count + (batchIsOpen ? shared.batchCount : 0) }

    var hasPendingOutput: Bool { pendingOutputCount > 0 }

    /// Whether writes go into the loop's write batch now (a read handler of this connection runs).
    var batchIsOpen: Bool { ownsBatch }

    func checkWritable(_ function: StaticString = #function) throws(NetError) {
        checkThread(function)
        guard machine.acceptsWrites else { throw .connectionClosed(machine.endReason ?? .closedLocally) }
    }

    /// After queueing: note the high-water mark, and make sure the socket's readiness is watched.
    private func didQueue() {
        if !output.isEmpty {
            noteOutputWaiting()
            watchForWritable()
        }
        noteOutputLevel()
    }

    /// Output above the high-water mark: writers wait, and reading stops (by default) until it drains.
    func noteOutputLevel() {
        guard !aboveHighWater, pendingOutputCount > profile.options.writeHighWaterMark else { return }
        aboveHighWater = true
        if profile.pausesReadingWhileOutputIsFull { updateReadInterest() }
    }

    /// Sends what the transport takes now, with one system call on a socket; returns the count sent. A
    /// failure ends the connection (and sends nothing).
    private func sendNow(_ base: UnsafeMutableRawPointer, _ count: Int) -> Int {
        var vector = iovec(iov_base: base, iov_len: count)
        return transmit(&vector, 1)
    }

    /// One write of `count` vectors to the transport (a `writev` on a socket); returns the bytes moved.
    func transmit(_ vectors: UnsafePointer<iovec>, _ count: Int) -> Int {
        let transfer: Socket.Transfer
        if isPlainSocket {
            guard fd >= 0 else { return 0 }
            transfer = Socket.write(fd, vectors, count: count)
        } else {
            transfer = transport.write(vectors, count: count)
        }
        switch transfer {
        case .moved(let sent):
            sentByteCount &+= UInt64(sent)
            extras?.timeouts?.wrote(at: loop.clockNanoseconds)
            return sent
        case .wouldBlock, .endOfFile:
            return 0
        case .failed(let reason):
            writeFailure = reason  // ended by the caller, once the queue it is sending from is let go
            return 0
        }
    }

    /// Ends the connection if the last send failed; returns whether it did.
    func endIfSendFailed() -> Bool {
        guard let reason = writeFailure else { return false }
        writeFailure = nil
        end(reason)
        return true
    }

    /// Sends the write batch the read handler filled, with one `writev`; queues what the socket did not take.
    func sendBatch() {
        let queueWasEmpty = output.isEmpty
        shared.closeBatch(send: { vectors, count in
            queueWasEmpty && !machine.isClosed ? transmit(vectors, count) : 0
        }, keep: { bytes in
            if !machine.isClosed { output.append(bytes) }
        })
        if endIfSendFailed() || machine.isClosed { return }
        if !output.isEmpty {
            noteOutputWaiting()
            watchForWritable()
        }
        noteOutputLevel()
        afterOutputMoved()
    }

    /// Watches for the socket to take more (in memory, the transport says when the partner made room).
    func watchForWritable() {
        guard watchesDescriptor, !isWriteWatchActive, fd >= 0 else { return }
        extras?.timeouts?.outputStarted(at: loop.clockNanoseconds)
        do {
            if let writeWatch {
                try writeWatch.resume()
            } else {
                writeWatch = try loop.watch(fd, for: .writable) { [unowned self] _ in self.writeOut() }
            }
            isWriteWatchActive = true
        } catch {
            end(.failed(0))  // the output can never drain: end the connection rather than hang its writers
        }
    }

    /// Writes queued output until the socket is full or the queue is empty.
    func writeOut() {
        if isHandshaking {
            continueHandshake()
            return
        }
        while !output.isEmpty, !machine.isClosed {
            let sent = output.send { vectors, count in
                let sent = transmit(vectors, count)
                return (sent, sent)
            }
            if endIfSendFailed() { return }
            if sent == 0 { break }
        }
        if machine.isClosed { return }
        if output.isEmpty {
            if isWriteWatchActive {
                isWriteWatchActive = false
                writeWatch?.pause()
            }
            if let waiter = socketWaiter {  // a file send goes on from here (it watches again if it must)
                socketWaiter = nil
                waiter.resume(returning: .success(()))
            }
        } else {
            noteOutputWaiting()
        }
        afterOutputMoved()
    }

    /// Output is left queued after a write: stamps it on the loop's clock if it moved since the last stamp
    /// (or only now began waiting), so that a write-progress deadline counts from when it last moved. Only
    /// on the slow path (the transport did not take everything); no clock read while it stays stuck.
    func noteOutputWaiting() {
        let extras = ensuredExtras
        if extras.outputWait?.sent != sentByteCount { extras.outputWait = (sentByteCount, loop.clockNanoseconds) }
    }

    /// Since when the queued output (or a file send waiting for the socket) has not moved, on the loop's
    /// clock; nil when no output waits. `now` (the loop's clock) stands in when output moved without being
    /// stamped. Loop thread.
    package func outputStalledSince(now: UInt64) -> UInt64? {
        guard !output.isEmpty || socketWaiter != nil, !machine.isClosed else { return nil }
        let extras = ensuredExtras
        if let wait = extras.outputWait, wait.sent == sentByteCount { return wait.since }
        extras.outputWait = (sentByteCount, now)
        return now
    }

    /// Since when a graceful close has waited for its output to drain, on the loop's clock; nil when the
    /// connection is not closing. Loop thread.
    package var closingSince: UInt64? {
        guard case .closing = machine.state else { return nil }
        return extras?.closingSince
    }

    /// An in-memory transport's partner made room: send what waits (or take the handshake further).
    func transportHasRoom() {
        guard !machine.isClosed, isHandshaking || !output.isEmpty else { return }
        writeOut()
    }

    /// Output moved (or was found empty): wake writers at the low-water mark, finish a close or a
    /// half-close that waited for the output.
    func afterOutputMoved() {
        if aboveHighWater, pendingOutputCount <= profile.options.writeLowWaterMark {
            aboveHighWater = false
            let writers = writeWaiters
            writeWaiters = []
            for writer in writers { writer.resume(returning: .success(())) }
            handler?.connectionBecameWritable(self)
            if profile.pausesReadingWhileOutputIsFull, !machine.isClosed { updateReadInterest() }
        }
        // Counted again: the writable handler may have written more (and then closed, which waits for it).
        if pendingOutputCount == 0, !machine.isClosed { perform(machine.outputDrained()) }
    }
}
