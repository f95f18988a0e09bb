#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// How a connection's bytes move: through a socket (``SocketTransport``), into an in-memory partner
/// (``MemoryTransport``), or through a security layer over either (``TransportSecurity``: TLS, in
/// `LoopKitTLS`). A ``Connection`` owns one transport; everything above it (the read buffer, the write
/// batch, watermarks, the close state machine, a handshake's steps and deadline) is the same whatever
/// moves the bytes.
///
/// The transport says what it needs instead of the connection asking which kind it is:
/// - how readiness reaches the connection (``readiness``): the loop watches ``descriptor``, or the
///   transport announces it itself, through ``Connection/transportIsReadable()`` and
///   ``Connection/transportHasRoom()``, in the loop's next iteration;
/// - whether a read can leave input that readiness will not announce again (``readsAhead``,
///   ``hasUnannouncedInput``: TLS records decrypted with the last ones);
/// - whether bytes move only after a handshake (``needsHandshake``), its steps (``handshake()``) and
///   how long it may take (``handshakeTimeout``).
///
/// Loop-confined, like its connection: every call on the loop's thread.
package protocol Transport: AnyObject {
    /// How the connection learns that it can read or write. A constant.
    var readiness: TransportReadiness { get }

    /// The descriptor the loop watches for readiness (with ``TransportReadiness/watchedDescriptor``);
    /// -1 for a transport that announces readiness itself, and once closed.
    var descriptor: Int32 { get }

    /// Reads up to `count` bytes into `buffer`.
    func read(into buffer: UnsafeMutableRawPointer, count: Int) -> Socket.Transfer

    /// Sends the `count` buffers of `vectors` in order, as much as the transport takes now.
    func write(_ vectors: UnsafePointer<iovec>, count: Int) -> Socket.Transfer

    /// The connection wants to read again (or no longer does): an in-memory transport tells its partner
    /// that room was made, and announces bytes it holds.
    func readInterestChanged(wanted: Bool)

    /// Ends the sending side; the peer reads end of file, this side keeps reading.
    func shutdownOutput()

    /// Closes the transport, once. `reset` drops what is unsent and resets the connection;
    /// `notifyingPeer` (a clean end, after any handshake) lets a TLS session send `close_notify` first.
    func close(reset: Bool, notifyingPeer: Bool)

    // MARK: Read-ahead

    /// A read may leave input the transport holds and its readiness will not announce again, and may let
    /// blocked output move (TLS: read-ahead, a key update): the connection looks at
    /// ``hasUnannouncedInput`` after each read, and sends waiting output. A constant.
    var readsAhead: Bool { get }

    /// Input the transport holds that its readiness will not announce: the connection reads it in the
    /// loop's next iteration. Always false unless ``readsAhead``.
    var hasUnannouncedInput: Bool { get }

    // MARK: Handshake

    /// Bytes move only once ``handshake()`` is ``HandshakeStep/done``. A constant.
    var needsHandshake: Bool { get }

    /// How long the handshake may take before the connection ends with ``handshakeFailure(_:)``.
    var handshakeTimeout: Duration { get }

    /// Takes the handshake as far as the transport allows now; readiness calls it again.
    func handshake() -> HandshakeStep

    /// What a handshake that failed (`description`: the error, a timeout) ends the connection with, and
    /// what its waiter is told.
    func handshakeFailure(_ description: String) -> HandshakeFailure
}

/// How a transport's readiness reaches its connection.
package enum TransportReadiness {
    /// The loop watches the transport's descriptor for readable and writable.
    case watchedDescriptor
    /// The transport tells its connection itself, in the loop's next iteration (in memory).
    case announced
}

/// Where a handshake stands after a step.
package enum HandshakeStep {
    /// Finished: bytes move.
    case done
    /// Waiting for the peer's bytes: readable readiness takes it further.
    case wantRead
    /// Waiting to send: writable readiness takes it further.
    case wantWrite
    /// Failed, as described.
    case failed(String)
}

/// What a failed handshake ends its connection with, and what the handshake's waiter is told.
package struct HandshakeFailure {
    /// The error the connect, the listener or a test's pair is told.
    package let error: NetError
    /// The connection's close reason.
    package let reason: CloseReason

    package init(error: NetError, reason: CloseReason) {
        self.error = error
        self.reason = reason
    }
}

extension Transport {
    /// The transports with no read-ahead hold nothing unannounced.
    package var readsAhead: Bool { false }
    package var hasUnannouncedInput: Bool { false }

    /// The transports with no handshake are ready at once.
    package var needsHandshake: Bool { false }
    package var handshakeTimeout: Duration { .zero }
    package func handshake() -> HandshakeStep { .done }
    package func handshakeFailure(_ description: String) -> HandshakeFailure {
        HandshakeFailure(error: .connectionClosed(.failed(0)), reason: .failed(0))
    }
}
