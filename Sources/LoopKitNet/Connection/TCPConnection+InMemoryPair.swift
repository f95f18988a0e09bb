import LoopKit

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

extension TCPConnection {
    /// Two connections joined in memory on `loop` (the first in a client's role, the second in a server's): what one writes moves straight into the other's input
    /// (up to its read high-water mark; the rest waits in the writer's output), and the reader's
    /// callbacks run in the loop's next iteration, so a test drives them iteration by iteration. The same
    /// watermarks, backpressure and close reasons as sockets; no socket options; of the timeouts, only
    /// the idle timeout. `LoopKitTesting`'s `InMemoryConnectionPair` is the public face.
    ///
    /// Call on the loop's thread.
    package static func makeInMemoryPair(on loop: EventLoop, options: ConnectionOptions) throws(NetError) -> (TCPConnection, TCPConnection) {
        precondition(loop.isCurrent, "makeInMemoryPair(on:options:) called off the loop's thread")
        guard loop.isAcceptingWork else { throw .loopShutDown }
        var pairOptions = options
        pairOptions.readTimeout = nil
        pairOptions.writeTimeout = nil
        let a = TCPConnection(loop: loop, fd: -1, profile: ConnectionProfile(options: pairOptions, isTCP: false, accepted: false),
                              inMemory: true, connected: true)
        let b = TCPConnection(loop: loop, fd: -1, profile: ConnectionProfile(options: pairOptions, isTCP: false, accepted: true),
                              inMemory: true, connected: true)
        a.partner = b
        b.partner = a
        a.start()
        b.start()
        return (a, b)
    }

    /// In memory: moves what the partner has room for into its input; returns the count moved.
    func pushToPartner(_ vectors: UnsafePointer<iovec>, _ count: Int) -> Int {
        guard let partner, !partner.machine.isClosed, !partner.memoryPeerEnded else {
            writeFailure = .brokenPipe
            return 0
        }
        var room = partner.wantsToRead ? partner.profile.options.readHighWaterMark - partner.input.count : 0
        var moved = 0
        for index in 0..<count where room > 0 {
            let take = min(vectors[index].iov_len, room)
            partner.input.append(UnsafeRawBufferPointer(start: vectors[index].iov_base, count: take))
            moved += take
            room -= take
            if take < vectors[index].iov_len { break }
        }
        if moved > 0 {
            timeouts?.wrote(at: loop.clockNanoseconds)
            partner.timeouts?.read(at: loop.clockNanoseconds)
            partner.queueDelivery()
        }
        return moved
    }

    /// In memory: the partner consumed input; send it more of the output in the next iteration.
    func partnerHasRoom() {
        guard !output.isEmpty, !memoryWriteQueued else { return }
        memoryWriteQueued = true
        do {
            try loop.enqueue { [self] in
                memoryWriteQueued = false
                if !machine.isClosed { writeOut() }
            }
        } catch {
            // Refused: the loop is shutting down and its shutdown ends this connection.
        }
    }

    /// In memory: the partner ended its output (closed or shut down its sending side); this side reads
    /// end of file once it has delivered the bytes before it.
    func partnerEndedOutput() {
        guard !memoryPeerEnded else { return }
        memoryPeerEnded = true
        queueDelivery()
    }

    /// In memory: act on the partner's end of file once the bytes before it were offered.
    func checkMemoryEndOfFile() {
        guard isInMemory, memoryPeerEnded, !machine.inputEnded, !machine.isClosed else { return }
        peerEndedOutput()
    }
}
