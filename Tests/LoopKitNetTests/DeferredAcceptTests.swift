import LoopKit
import LoopKitNet
import Synchronization
import Testing

@Suite("Deferred accept: a listener that hands a connection over with its first bytes")
struct DeferredAcceptTests {
    /// What the listener saw: each accepted connection, and whether its client had sent by then.
    final class AcceptLog: Sendable {
        let clientSent = Atomic<Bool>(false)
        let sentWhenAccepted = Recorder<Bool>()

        var acceptedCount: Int { sentWhenAccepted.all.count }
    }

    /// A listener on one loop that records into an ``AcceptLog`` and echoes.
    struct Probe {
        let group: LoopGroup
        let listener: TCPListener
        let log = AcceptLog()

        init(defers: Bool, deferral: Duration = ListenerOptions.deferredAcceptTimeout) throws {
            group = try LoopGroup(threads: 1)
            var options = ListenerOptions()
            options.defersAcceptUntilData = defers
            options.deferralTimeout = deferral
            let log = log
            listener = try TCPListener.bind(host: "127.0.0.1", port: 0, on: group.loops[0], options: options) { connection in
                log.sentWhenAccepted.record(log.clientSent.load(ordering: .acquiring))
                echoByCallbacks(connection)
            }
        }

        /// Connects a client, runs `whileSilent` with the log before the client sends anything, then,
        /// when `sends`, sends one byte (marked in the log first) and reads its echo. Closes everything.
        func converse(sends: Bool = true, whileSilent: @escaping @Sendable (AcceptLog) async -> Void) async throws {
            let loop = group.loops[0]
            let address = listener.localAddress
            let log = log
            try await onLoop(loop) {
                let client = try await Connection.connect(to: address, on: loop)
                await whileSilent(log)
                if sends {
                    log.clientSent.store(true, ordering: .releasing)
                    try await client.send("x")
                    #expect(try await readBytes(1, from: client) == Array("x".utf8))
                }
                client.close()
            }
            await listener.shutdown()
            group.shutdown()
        }
    }

    @Test func aDeferringListenerHandsAConnectionOverOnlyWithItsFirstBytes() async throws {
        // A deferral far longer than the test: a loaded machine that stalls the test for seconds between
        // connecting and sending cannot make the kernel hand the silent connection over meanwhile.
        let probe = try Probe(defers: true, deferral: .seconds(120))
        try await probe.converse { log in
            // Connected (the handshake is done) but silent: the kernel keeps the connection.
            #expect(await !eventually(within: .milliseconds(300)) { log.acceptedCount > 0 })
        }
        #expect(probe.log.sentWhenAccepted.all == [true])
    }

    @Test func aListenerThatDoesNotDeferHandsAConnectionOverBeforeItsFirstBytes() async throws {
        let probe = try Probe(defers: false)
        try await probe.converse { log in
            // Handed over while the client is silent (the wait is a safety net, not a timing assertion).
            #expect(await eventually { log.acceptedCount > 0 })
        }
        #expect(probe.log.sentWhenAccepted.all == [false])
    }

    @Test func aSilentClientIsHandedOverAfterTheDeferralTimesOut() async throws {
        let probe = try Probe(defers: true)
        try await probe.converse(sends: false) { log in
            // The kernel hands it over after about `deferredAcceptTimeout` (when it resends its reply to
            // the handshake); the bound is a safety net, not a timing assertion.
            #expect(await eventually { log.acceptedCount > 0 })
        }
        #expect(probe.log.sentWhenAccepted.all == [false])
    }
}
