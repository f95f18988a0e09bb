#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// One end of two transports joined in memory (``Connection/makeInMemoryPair(on:options:security:handshaken:)``):
/// what one end writes moves into the other's inbound bytes, up to the room its connection has (its read
/// high-water mark, less what it holds unread; none while it does not want to read), and the rest waits
/// in the writer's output. Readiness is announced, not watched: the reader's connection reads in the
/// loop's next iteration, and the writer's sends more once the reader made room, in the iteration after
/// that — so a test steps a conversation iteration by iteration.
///
/// Loop-confined: both ends live on one loop.
final class MemoryTransport: Transport {
    /// The connection this end belongs to (set once, when the connection is made).
    unowned(unsafe) var owner: Connection!
    /// The other end.
    weak var partner: MemoryTransport?
    /// Bytes the partner wrote that the owner has not read yet.
    private var inbound = InputBuffer()
    /// The partner ended its output: reads return end of file once `inbound` is empty.
    private var partnerEnded = false
    /// This end was closed.
    private var isClosed = false
    /// A read by the owner is queued for the next iteration.
    private var readQueued = false
    /// A write by the owner is queued for the next iteration (the partner made room).
    private var writeQueued = false

    var readiness: TransportReadiness { .announced }
    var descriptor: Int32 { -1 }

    func read(into buffer: UnsafeMutableRawPointer, count: Int) -> Socket.Transfer {
        guard !inbound.isEmpty else { return partnerEnded ? .endOfFile : .wouldBlock }
        let moved = min(count, inbound.count)
        buffer.copyMemory(from: inbound.bytes.baseAddress!, byteCount: moved)
        inbound.removeFirst(moved)
        if !inbound.isEmpty || partnerEnded { announceReadable() }  // what one read left
        partner?.announceRoom()
        return .moved(moved)
    }

    func write(_ vectors: UnsafePointer<iovec>, count: Int) -> Socket.Transfer {
        guard !isClosed else { return .wouldBlock }
        // As on a socket, what the partner wrote before it closed is read before a write fails: a server that
        // answers 413 and closes while the client still sends is heard (the read of it is queued).
        guard let partner, !partner.isClosed else { return inbound.isEmpty ? .failed(.brokenPipe) : .wouldBlock }
        guard !partner.partnerEnded else { return .failed(.brokenPipe) }
        var room = partner.room
        var moved = 0
        for index in 0..<count where room > 0 {
            let take = min(vectors[index].iov_len, room)
            partner.inbound.append(UnsafeRawBufferPointer(start: vectors[index].iov_base, count: take))
            moved += take
            room -= take
            if take < vectors[index].iov_len { break }
        }
        guard moved > 0 else { return .wouldBlock }
        partner.announceReadable()
        return .moved(moved)
    }

    func readInterestChanged(wanted: Bool) {
        guard wanted else { return }
        partner?.announceRoom()
        if !inbound.isEmpty || partnerEnded { announceReadable() }
    }

    func shutdownOutput() {
        partner?.partnerEndedOutput()
    }

    func close(reset: Bool, notifyingPeer: Bool) {
        guard !isClosed else { return }
        isClosed = true
        inbound.release()
        partner?.partnerEndedOutput()
    }

    // MARK: Between the ends

    /// What the partner may move in now: the owner's read high-water mark less what it holds unread.
    private var room: Int {
        guard !isClosed, let owner, owner.wantsToRead else { return 0 }
        return max(0, owner.profile.options.readHighWaterMark - owner.input.count - inbound.count)
    }

    /// The partner ended its output: the owner reads end of file after the bytes before it.
    private func partnerEndedOutput() {
        guard !partnerEnded else { return }
        partnerEnded = true
        announceReadable()
    }

    /// The owner reads in the loop's next iteration.
    private func announceReadable() {
        guard !readQueued, !isClosed else { return }
        readQueued = true
        onNextIteration { [self] in
            readQueued = false
            guard !isClosed else { return }
            // An end reaches a side that is not reading too, as it always has in the pair (a socket's
            // reader would learn of it only once it reads again): a test sees a peer leave.
            if partnerEnded, !owner.wantsToRead { owner.transportEnded() } else { owner.transportIsReadable() }
        }
    }

    /// The owner writes what waits in its output in the loop's next iteration: the partner made room.
    private func announceRoom() {
        guard !writeQueued, !isClosed else { return }
        writeQueued = true
        onNextIteration { [self] in
            writeQueued = false
            if !isClosed { owner.transportHasRoom() }
        }
    }

    /// Runs `body` in the loop's next iteration (R2, R3); a loop shutting down refuses it, and its
    /// shutdown ends both connections.
    private func onNextIteration(_ body: @escaping () -> Void) {
        let job = UncheckedSendableBox(body)
        do {
            try owner.loop.enqueue { job.value() }
        } catch {
            // Refused: the loop is shutting down and its shutdown ends this connection.
        }
    }
}
