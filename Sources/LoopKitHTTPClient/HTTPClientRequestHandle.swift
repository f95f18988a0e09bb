import LoopKit

/// A request started with ``HTTPClient``'s callback form: cancel it from any thread.
///
/// Safe from any thread.
public final class HTTPClientRequestHandle: Sendable {
    private enum State {
        case notStarted
        case started(id: TransferID, engine: any RequestCanceller)
        case cancelled
        case ended
    }

    private let state = Lock(State.notStarted)

    init() {}

    /// Ends the request with ``HTTPClientError/Kind/cancelled``: its completion (or its body's reader) is
    /// told so, once. After the request ended, does nothing.
    ///
    /// Safe from any thread; the request ends on the client's loop.
    public func cancel() {
        let started: (TransferID, any RequestCanceller)? = state.withLock { state in
            switch state {
            case .notStarted:
                state = .cancelled
                return nil
            case .started(let id, let engine):
                state = .cancelled
                return (id, engine)
            case .cancelled, .ended:
                return nil
            }
        }
        guard let (id, engine) = started else { return }
        let error = HTTPClientError(.cancelled, "the request was cancelled")
        // Queued even on the loop: a cancel from inside one of curl's callbacks must not reach into curl.
        do {
            try engine.loop.enqueue { engine.cancel(id, with: error) }
        } catch {
            // Refused once the loop began to shut down: its shutdown observer ends every transfer.
        }
    }

    /// The engine started the request; false when it was cancelled first. Loop thread.
    func started(id: TransferID, engine: any RequestCanceller) -> Bool {
        state.withLock { state in
            guard case .notStarted = state else { return false }
            state = .started(id: id, engine: engine)
            return true
        }
    }

    /// The request ended; a later cancel does nothing. Loop thread.
    func ended() { state.withLock { $0 = .ended } }

    /// The request moves to another engine (the own engine hands a redirect it cannot follow to curl's):
    /// it may be started again; false when it was cancelled meanwhile. Loop thread.
    func handedOver() -> Bool {
        state.withLock { state in
            guard case .started = state else { return false }
            state = .notStarted
            return true
        }
    }
}

/// An engine a request handle cancels its request through (curl's ``ClientEngine`` or the own
/// ``OwnEngine``): `cancel` is called on `loop`'s thread.
protocol RequestCanceller: AnyObject, Sendable {
    var loop: EventLoop { get }
    func cancel(_ id: TransferID, with error: HTTPClientError)
}
