import LoopKit

extension WebSocket {
    /// Sends `progress` over the socket: one text message per change, coalesced to at most one per
    /// iteration of the socket's loop, ending with the final state (finished or cancelled); returns then.
    ///
    /// Each message is the snapshot as one JSON object (`ProgressSnapshot.jsonObject`) with a
    /// `"kind"` of `progress`, `finished` or `cancelled` added. As with
    /// ``HTTPServerResponse/progressEvents(_:keepAlive:)``, there is no polling, a slow client gets the
    /// newest state when it catches up, and the final state is never dropped. Each send waits while the
    /// socket's output is above its high-water mark.
    ///
    /// - Parameter progress: The progress to send; any thread may change it.
    /// - Throws: ``WebSocketError`` when the socket closes first (the observation ends with it).
    ///
    /// Call from a task on the socket's loop (the async route handler).
    public func send(progress: TaskProgress) async throws(WebSocketError) {
        for await snapshot in progress.snapshots(on: loop) {
            let kind = snapshot.isCancelled ? "cancelled" : snapshot.isFinished ? "finished" : "progress"
            try await send(.text("{\"kind\":\"\(kind)\"," + snapshot.jsonObject.dropFirst()))
        }
    }
}
