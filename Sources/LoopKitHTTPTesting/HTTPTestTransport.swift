/// How an ``HTTPTestClient`` moves bytes to the server under test and back: in memory on a stepped loop,
/// or over a real socket. The client owns one; everything is called on the client's thread.
protocol HTTPTestTransport: AnyObject {
    /// Hands `bytes` to the server (in memory: into the pair; live: onto the socket).
    func send(_ bytes: [UInt8]) throws
    /// Takes every byte received since the last call.
    func takeReceived() -> [UInt8]
    /// Whether the server has closed its end (every byte before the end has been received).
    var isClosedByServer: Bool { get }
    /// Lets the server make progress once: in memory, one loop iteration if any work or due timer is
    /// pending (false when the loop is idle); live, waits until something arrives or the server closes
    /// (false after the safety timeout).
    func waitForProgress() throws -> Bool
    /// Lets the server finish what it has queued: in memory, runs iterations until nothing is queued or
    /// due; live, waits until the server's loop has run two drains, so that the work the iteration that
    /// wrote the last response queued (a metrics flush, say) has run.
    func runUntilIdle() throws
    /// Moves time forward (in memory: virtual time, firing due timers; live: real time passes).
    func advance(by duration: Duration) throws
    /// Closes the client's end.
    func closeClient() throws
    /// Stops the server and releases everything (idempotent).
    func shutDown()
}
