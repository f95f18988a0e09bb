import LoopKit

extension Connection {
    /// Closes after a protocol error without losing the last words to a reset: sends the buffered output
    /// (an error response, a close frame), shuts down the sending side (the peer reads them, then end of
    /// file), then reads and drops what the peer still sends until it closes too, or `limit` bytes have come
    /// and the peer has acknowledged every byte sent (a reset then loses nothing), or `duration` has passed,
    /// and closes. A plain ``close()`` with the peer still sending makes the kernel
    /// answer the unread bytes with a reset, which can discard what was just sent before the peer read it
    /// (RFC 6455 §7.1.1, RFC 9112 §9.6; nginx's `lingering_close`). The handler reads nothing more; the
    /// connection ends with ``CloseReason/closedLocally``, or ``CloseReason/peerClosed`` when the peer closed
    /// first. On a connection whose peer has ended its output already, it is ``close()``.
    ///
    /// - Parameters:
    ///   - limit: The most bytes read and dropped before closing anyway.
    ///   - duration: The longest wait for the peer to close.
    ///
    /// Call on the loop's thread. The corresponding system calls are `shutdown(fd, SHUT_WR)`, `read` and `close`.
    public func closeAfterDrainingInput(upTo limit: Int = 256 * 1024, within duration: Duration = .seconds(2)) {
        checkThread()
        guard case .open(false, .open) = machine.state, extras?.lingering == nil else { return close() }
        ensuredExtras.lingering = Lingering(remaining: limit)
        do {
            ensuredExtras.lingering?.timer = try loop.schedule(after: duration) { [weak self] in self?.stopLingering() }
        } catch {
            return close()  // the loop is shutting down, which ends the connection anyway
        }
        readingPausedByUser = false
        input.release()  // unread input the handler declined is dropped too
        shutdownOutput()
        updateReadInterest()
    }

    /// Whether input is being read and dropped before the close.
    var isLingering: Bool { extras?.lingering != nil }

    /// Drops `count` bytes read while lingering; closes once the limit is reached and the peer has
    /// acknowledged what was sent.
    func dropWhileLingering(_ count: Int) {
        guard let remaining = extras?.lingering?.remaining else { return }
        extras?.lingering?.remaining = remaining - count
        if remaining - count <= 0, transport.descriptor < 0 || Socket.unacknowledgedOutput(transport.descriptor) == 0 {
            stopLingering()
        }
    }

    /// The linger is over (its time or its bytes): the connection ends.
    private func stopLingering() {
        guard !machine.isClosed else { return }
        end(.closedLocally)
    }

    /// Cancels the linger's timer when the connection ends.
    func endLingering() {
        extras?.lingering?.timer?.cancel()
        extras?.lingering = nil
    }
}

/// A connection that reads and drops its input before closing (``Connection/closeAfterDrainingInput(upTo:within:)``).
struct Lingering {
    /// Bytes still allowed to arrive.
    var remaining: Int
    /// Ends the linger after its duration.
    var timer: ScheduledTimer?
}
