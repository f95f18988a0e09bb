import LoopKit

extension Connection {
    /// Lends the buffered unread bytes to `body` now, outside a read callback, and drops what it consumed.
    ///
    /// - Parameter body: Gets the contiguous unread bytes (possibly empty); returns the count consumed.
    /// - Returns: The count consumed.
    ///
    /// Call on the loop's thread.
    @discardableResult
    public func consumeBufferedInput(_ body: (UnsafeRawBufferPointer) -> Int) -> Int {
        checkThread()
        let available = input.count
        let consumed = body(input.bytes)
        precondition(consumed >= 0 && consumed <= available, "LoopKitNet: consumed \(consumed) of \(available) bytes")
        if consumed > 0 {
            input.removeFirst(consumed)
            inputWasConsumed()
        }
        return consumed
    }

    /// Bytes read from the socket and not yet consumed. Call on the loop's thread.
    public var bufferedInputCount: Int {
        checkThread()
        return input.count
    }

    /// Stops reading from the socket until ``resumeReading()``; bytes already read stay buffered.
    ///
    /// Call on the loop's thread. The corresponding libevent call is `event_del` (through `Watch.pause()`).
    public func pauseReading() {
        checkThread()
        readingPausedByUser = true
        updateReadInterest()
    }

    /// Reads from the socket again after ``pauseReading()``.
    ///
    /// Call on the loop's thread. The corresponding libevent call is `event_add` (through `Watch.resume()`).
    public func resumeReading() {
        checkThread()
        readingPausedByUser = false
        updateReadInterest()
    }

    // MARK: Internals (loop thread)

    /// Whether the socket should be read now: open, the peer has not ended, and no backpressure holds.
    var wantsToRead: Bool {
        !readingPausedByUser && !machine.inputEnded && input.count < profile.options.readHighWaterMark
            && !(aboveHighWater && profile.pausesReadingWhileOutputIsFull)
    }

    /// Starts or stops the read watch to match ``wantsToRead``.
    func updateReadInterest() {
        let wanted = wantsToRead && !machine.isClosed
        if !watchesDescriptor {  // the transport announces what it holds
            if wanted {
                transport.readInterestChanged(wanted: true)
                if readsAhead, transport.hasUnannouncedInput { queueUnannouncedRead() }
            }
            return
        }
        guard wanted != isReadWatchActive, let readWatch else { return }
        isReadWatchActive = wanted
        if wanted, readsAhead, transport.hasUnannouncedInput { queueUnannouncedRead() }  // what the socket will not announce
        if wanted {
            extras?.timeouts?.readingResumed(at: loop.clockNanoseconds)
            do {
                try readWatch.resume()
            } catch {
                end(.failed(0))  // the socket can no longer be watched: end rather than hang
            }
        } else {
            readWatch.pause()
        }
    }

    /// The transport has bytes to read: the read watch fired, the first read at accept, or an in-memory
    /// transport announced them.
    func transportIsReadable() {
        if isHandshaking {
            continueHandshake()
            return
        }
        guard !machine.isClosed, wantsToRead else {
            updateReadInterest()
            return
        }
        let transfer: Socket.Transfer
        if input.isEmpty && (handlerReads || readWaiter.isWaiting) {
            // Nothing left over: read into the loop's shared buffer and lend the bytes there.
            let limit = min(shared.readCapacity, profile.options.readHighWaterMark)
            transfer = readSome(into: shared.read, count: limit)
            if case .moved(let count) = transfer {
                extras?.timeouts?.read(at: loop.clockNanoseconds)
                deliver(UnsafeRawBufferPointer(start: shared.read, count: count), fromSharedBuffer: true)
                afterReadAhead()
                return
            }
        } else {
            // Bytes are left over (or nobody reads yet): extend the connection's own buffer.
            let room = min(profile.options.readHighWaterMark - input.count, shared.readCapacity)
            transfer = input.append(upTo: max(room, InputBuffer.growth)) { target, capacity in
                let transfer = readSome(into: target, count: min(capacity, room))
                if case .moved(let count) = transfer { return (count, transfer) }
                return (0, transfer)
            }
            if case .moved = transfer {
                extras?.timeouts?.read(at: loop.clockNanoseconds)
                deliverInput()
                afterReadAhead()
                return
            }
        }
        switch transfer {
        case .moved, .wouldBlock:
            break
        case .endOfFile:
            peerEndedOutput()
        case .failed(let reason):
            end(reason)
        }
    }

    /// An in-memory transport's partner ended its output while this side is not reading: the end is
    /// acted on now, the bytes this side declined staying unread.
    func transportEnded() {
        guard !machine.isClosed, !machine.inputEnded else { return }
        peerEndedOutput()
    }

    /// One read from the transport.
    @inline(__always)
    private func readSome(into buffer: UnsafeMutableRawPointer, count: Int) -> Socket.Transfer {
        if isPlainSocket { return Socket.read(fd, into: buffer, count: count) }
        return transport.read(into: buffer, count: count)
    }

    /// After a read from a transport that reads ahead (TLS): bytes it holds are not announced again, so
    /// they are read in the next iteration; output a read unblocked (a TLS key update) is sent.
    private func afterReadAhead() {
        guard readsAhead, !machine.isClosed else { return }
        if transport.hasUnannouncedInput, wantsToRead { queueUnannouncedRead() }
        if !output.isEmpty { writeOut() }
    }

    /// Reads what the transport holds unannounced (TLS read-ahead), in the loop's next iteration.
    func queueUnannouncedRead() {
        do {
            try loop.enqueue { [self] in if !machine.isClosed, wantsToRead { transportIsReadable() } }
        } catch {
            // Refused: the loop is shutting down and its shutdown ends this connection.
        }
    }

    /// Hands freshly read bytes to whoever reads: a waiting `inbound` reader gets them as a chunk, the
    /// read handler is lent them; what is left unconsumed is kept.
    private func deliver(_ bytes: UnsafeRawBufferPointer, fromSharedBuffer: Bool) {
        if extras != nil, isLingering { return dropWhileLingering(bytes.count) }
        if let consumer = readWaiter.unpark() {
            consumer.resume(returning: Bytes(copying: bytes))
            return
        }
        guard handlerReads else {
            input.append(bytes)
            updateReadInterest()
            return
        }
        let consumed = dispatchRead(bytes)
        if consumed < bytes.count, !machine.isClosed {
            input.append(UnsafeRawBufferPointer(rebasing: bytes[consumed...]))
            if consumed == 0, !handlerWasReplaced { declinedCount = input.count }
        }
        afterDispatch(consumed: consumed)
    }

    /// Hands the bytes held in the connection's own buffer to whoever reads.
    func deliverInput() {
        guard !input.isEmpty else { return }
        if extras != nil, isLingering {
            let count = input.count
            input.release()
            return dropWhileLingering(count)
        }
        if let consumer = readWaiter.unpark() {
            consumer.resume(returning: takeInputChunk())
            return
        }
        guard handlerReads, input.count != declinedCount else {
            updateReadInterest()
            return
        }
        let count = input.count
        let consumed = dispatchRead(input.bytes)
        if machine.isClosed {
            input.release()  // released late: the handler was reading it
        } else {
            input.removeFirst(consumed)
            declinedCount = consumed == 0 && !handlerWasReplaced ? count : 0
        }
        afterDispatch(consumed: consumed)
    }

    /// Runs the read handler on `bytes` with the write batch open; returns the count consumed.
    private func dispatchRead(_ bytes: UnsafeRawBufferPointer) -> Int {
        guard handlerReads, let handler else { return 0 }
        inReadDispatch = true
        handlerWasReplaced = false
        ownsBatch = shared.openBatch(for: ObjectIdentifier(self))
        let consumed = handler.connection(self, received: bytes)
        inReadDispatch = false
        precondition(consumed >= 0 && consumed <= bytes.count, "LoopKitNet: a read handler consumed \(consumed) of \(bytes.count) bytes")
        return consumed
    }

    /// After a read handler: send its batch, then follow up on what it consumed.
    @inline(__always)
    private func afterDispatch(consumed: Int) {
        if ownsBatch {
            ownsBatch = false
            sendBatch()
        }
        if consumed > 0 { declinedCount = 0 }
        if machine.isClosed { return }
        if handlerWasReplaced {  // the new handler is offered what the old one left
            handlerWasReplaced = false
            if !input.isEmpty { queueDelivery() }
        }
        inputWasConsumed()
    }

    /// Input was consumed: read again if the read high-water mark held reading, and act on an end of
    /// file that waited for the last byte.
    func inputWasConsumed() {
        declinedCount = min(declinedCount, input.count)
        if machine.inputEnded, input.isEmpty {
            perform(machine.inputDrained(allowsHalfClosure: profile.options.allowsHalfClosure, outputPending: hasPendingOutput))
        }
        updateReadInterest()
    }

    /// Moves up to a read high-water mark of unread input into a new ``Bytes`` (the one copy on the
    /// async read path).
    func takeInputChunk() -> Bytes {
        let count = min(input.count, profile.options.readHighWaterMark)
        let chunk = Bytes(copying: UnsafeRawBufferPointer(rebasing: input.bytes[..<count]))
        input.removeFirst(count)
        inputWasConsumed()
        return chunk
    }

    /// The peer ended its side (end of file).
    func peerEndedOutput() {
        extras?.timeouts?.read(at: loop.clockNanoseconds)
        let inputPending = !handlerReads && !input.isEmpty
        if handlerReads { input.release() }  // the handler declined those bytes: they stay unread
        perform(machine.peerEnded(allowsHalfClosure: profile.options.allowsHalfClosure, inputPending: inputPending,
                                  outputPending: hasPendingOutput))
        if !machine.isClosed { updateReadInterest() }
    }

    /// Runs the read handler on buffered bytes in the loop's next iteration (a handler set when bytes
    /// were already buffered).
    func queueDelivery() {
        guard !deliveryQueued else { return }
        deliveryQueued = true
        do {
            try loop.enqueue { [self] in
                deliveryQueued = false
                if !machine.isClosed { deliverInput() }
            }
        } catch {
            // Refused: the loop is shutting down and its shutdown ends this connection; no read is due.
        }
    }
}
